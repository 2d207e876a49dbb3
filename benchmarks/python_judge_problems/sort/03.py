import sys

n, *a = map(int, sys.stdin.read().split())
print(" ".join(map(str, sorted(a))))
