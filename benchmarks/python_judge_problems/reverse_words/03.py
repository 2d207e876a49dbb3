import sys

k, *words = sys.stdin.read().split()
print(*words[::-1])
