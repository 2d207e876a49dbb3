from functools import reduce
from math import gcd

n = int(input())
print(reduce(gcd, map(int, input().split())))
