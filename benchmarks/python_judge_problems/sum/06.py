# Sum of the array: Python's ints do not overflow.
import sys

input = sys.stdin.readline

n = int(input())
answer = 0
for value in map(int, input().split()):
    answer = answer + value
print(answer)
