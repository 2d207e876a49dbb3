#include <bits/stdc++.h>
using namespace std;

int main() {
    long long n;
    cin >> n;
    if (n <= 2) {
        cout << 0 << "\n";
        return 0;
    }
    // 2 is the only even prime; sieve the odd numbers below n.
    vector<bool> odd_composite(n / 2 + 1, false);
    long long total = 1;
    for (long long i = 3; i < n; i += 2) {
        if (odd_composite[i / 2]) continue;
        ++total;
        for (long long j = i * i; j < n; j += 2 * i) odd_composite[j / 2] = true;
    }
    cout << total << "\n";
}
