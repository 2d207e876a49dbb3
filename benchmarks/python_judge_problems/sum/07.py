from functools import reduce
import operator

_ = input()
print(reduce(operator.add, map(int, input().split()), 0))
