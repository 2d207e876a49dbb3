import sys


def gcd(a, b):
    while b:
        a, b = b, a % b
    return a


data = sys.stdin.read().split()
n = int(data[0])
g = 0
for x in data[1 : n + 1]:
    g = gcd(g, int(x))
print(g)
