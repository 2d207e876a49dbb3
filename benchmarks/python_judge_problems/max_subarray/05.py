n = int(input())
a = list(map(int, input().split()))
best = -(2**63)  # LLONG_MIN
for i in range(n):
    s = 0
    for j in range(i, n - 1):
        s += a[j]
        best = max(best, s)
print(best)
