import sys
from math import gcd

n, *a = map(int, sys.stdin.read().split())
g = 0
for x in a:
    g = gcd(g, x)
    if g == 1:
        break
print(g)
