import sys
from math import isqrt

LIMIT = 100_000
smallest = list(range(LIMIT + 1))
for i in range(2, isqrt(LIMIT) + 1):
    if smallest[i] == i:
        for j in range(i * i, LIMIT + 1, i):
            if smallest[j] == j:
                smallest[j] = i

n = int(sys.stdin.readline())
print(sum(1 for k in range(2, n) if smallest[k] == k))
