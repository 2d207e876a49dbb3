#include <bits/stdc++.h>
int main() {
    int n;
    if (scanf("%d", &n) != 1) return 0;
    long long sum = 0, x;
    for (int i = 0; i < n; ++i) {
        if (scanf("%lld", &x) != 1) break;
        sum += x;
    }
    printf("%lld\n", sum);
    return 0;
}
