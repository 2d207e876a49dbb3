#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    cin >> n;
    vector<long long> a(n);
    for (auto &x : a) cin >> x;
    // The gcd divides every element, so it is the smallest one.
    cout << *min_element(a.begin(), a.end()) << "\n";
    return 0;
}
