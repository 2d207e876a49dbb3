#include <bits/stdc++.h>
using namespace std;
const long long MOD = 1000000009;

int main() {
    int n;
    if (scanf("%d", &n) != 1) return 0;
    long long prev = 0, cur = 1;
    if (n == 0) {
        printf("0\n");
        return 0;
    }
    for (int i = 1; i < n; i++) {
        long long next = (prev + cur) % MOD;
        prev = cur;
        cur = next;
    }
    printf("%lld\n", cur);
    return 0;
}
