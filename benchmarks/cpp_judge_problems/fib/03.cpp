#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    cin >> n;
    const long long MOD = 1e9 + 7;
    vector<long long> fib(max(2, n + 1));
    fib[0] = 0;
    fib[1] = 1;
    for (int i = 2; i <= n; ++i) fib[i] = (fib[i - 1] + fib[i - 2]) % MOD;
    cout << fib[n] << '\n';
}
