from math import gcd

n = int(input())
g = 1
for x in map(int, input().split()):
    g = gcd(g, x)
print(g)
