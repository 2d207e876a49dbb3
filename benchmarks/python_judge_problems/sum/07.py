import operator
from functools import reduce

_ = input()
print(reduce(operator.add, map(int, input().split()), 0))
