from math import gcd

n = int(input())
a = list(map(int, input().split()))
g = a[0]
for i in range(1, n - 1):
    g = gcd(g, a[i])
print(g)
