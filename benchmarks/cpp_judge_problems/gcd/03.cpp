#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    if (scanf("%d", &n) != 1) return 0;
    long long g;
    if (scanf("%lld", &g) != 1) return 0;
    for (int i = 1; i < n; i++) {
        long long x;
        if (scanf("%lld", &x) != 1) break;
        g = __gcd(g, x);
    }
    printf("%lld\n", g);
}
