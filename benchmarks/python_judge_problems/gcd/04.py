import math

n = int(input())
print(math.gcd(*map(int, input().split())))
