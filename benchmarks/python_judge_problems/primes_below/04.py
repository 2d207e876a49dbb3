import sys

n = int(sys.stdin.readline())
composite = set()
count = 0
for i in range(2, n):
    if i not in composite:
        count += 1
        composite.update(range(i * i, n, i))
print(count)
