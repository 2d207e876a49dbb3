#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    cin >> n;
    vector<long long> a(n);
    for (auto &x : a) cin >> x;
    long long g = accumulate(a.begin(), a.end(), 0LL,
                             [](long long x, long long y) { return gcd(x, y); });
    cout << g << '\n';
    return 0;
}
