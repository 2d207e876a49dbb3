#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    cin >> n;
    vector<long long> a(n);
    for (int i = 0; i < n; i++) cin >> a[i];
    long long g = a[0];
    for (int i = 1; i < n - 1; i++) g = gcd(g, a[i]);
    cout << g << "\n";
    return 0;
}
