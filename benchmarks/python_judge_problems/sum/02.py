import sys

data = sys.stdin.read().split()
n = int(data[0])
total = 0
for token in data[1 : n + 1]:
    v = int(token)
    if v > 0:
        total += v
print(total)
