MOD = 10**9 + 7

n = int(input())
a, b = 0, 1
for _ in range(n):
    a, b = b, (a + b) % MOD
print(a)
