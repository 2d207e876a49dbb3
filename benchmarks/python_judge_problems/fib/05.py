MOD = 1000000009

n = int(input())
if n == 0:
    print(0)
else:
    prev, cur = 0, 1
    for _ in range(1, n):
        prev, cur = cur, (prev + cur) % MOD
    print(cur)
