import sys

n = int(sys.stdin.read())
MOD = 1_000_000_007
x, y = 0, 1
i = 0
while i < n:
    x, y = y, x + y
    if y >= MOD:
        y -= MOD
    i += 1
print(x % MOD)
