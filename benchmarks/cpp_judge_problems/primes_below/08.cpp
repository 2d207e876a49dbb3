#include <bits/stdc++.h>
using namespace std;

// Linear sieve: every composite is crossed out once, by its least prime.
int main() {
    int n;
    cin >> n;
    vector<int> lp(max(n, 1), 0), primes;
    for (int i = 2; i < n; ++i) {
        if (lp[i] == 0) {
            lp[i] = i;
            primes.push_back(i);
        }
        for (int p : primes) {
            if (p > lp[i] || (long long)i * p >= n) break;
            lp[i * p] = p;
        }
    }
    cout << primes.size() << '\n';
    return 0;
}
