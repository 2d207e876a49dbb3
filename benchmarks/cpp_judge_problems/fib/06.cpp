#include <bits/stdc++.h>
using namespace std;
using ll = long long;
const ll MOD = 1'000'000'007;

// Fast doubling: returns (F(n), F(n + 1)).
pair<ll, ll> fib(ll n) {
    if (n == 0) return {0, 1};
    auto [a, b] = fib(n / 2);
    ll c = a * ((2 * b - a + MOD) % MOD) % MOD;
    ll d = (a * a + b * b) % MOD;
    if (n % 2 == 0) return {c, d};
    return {d, (c + d) % MOD};
}

int main() {
    ll n;
    cin >> n;
    cout << fib(n).first << '\n';
    return 0;
}
