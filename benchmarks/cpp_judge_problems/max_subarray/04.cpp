#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    if (scanf("%d", &n) != 1) return 0;
    long long prefix = 0, lowest = 0, best = LLONG_MIN;
    for (int i = 0; i < n; i++) {
        long long x;
        if (scanf("%lld", &x) != 1) break;
        prefix += x;
        best = max(best, prefix - lowest);
        lowest = min(lowest, prefix);
    }
    printf("%lld\n", best);
    return 0;
}
