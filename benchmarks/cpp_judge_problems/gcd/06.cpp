#include <bits/stdc++.h>
using namespace std;
typedef long long ll;

ll g(ll a, ll b) { return b == 0 ? a : g(b, a % b); }

int main() {
    ios::sync_with_stdio(false);
    int n;
    cin >> n;
    vector<ll> v(n);
    for (ll &x : v) cin >> x;
    ll r = v[0];
    for (int i = 1; i < n; ++i) r = g(r, v[i]);
    cout << r << '\n';
}
