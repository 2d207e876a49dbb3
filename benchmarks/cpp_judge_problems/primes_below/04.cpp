#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    if (scanf("%d", &n) != 1) return 0;
    if (n < 3) {
        puts("0");
        return 0;
    }
    vector<char> sieve(n, 1);
    sieve[0] = sieve[1] = 0;
    for (int i = 2; (long long)i * i < n; i++)
        if (sieve[i])
            for (int j = i * i; j < n; j += i) sieve[j] = 0;
    printf("%d\n", (int)count(sieve.begin(), sieve.end(), 1));
    return 0;
}
