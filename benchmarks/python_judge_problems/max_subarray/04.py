from itertools import accumulate

n = int(input())
a = list(map(int, input().split()))
prefix = [0, *accumulate(a)]
lowest = prefix[0]
best = None
for p in prefix[1:]:
    if best is None or p - lowest > best:
        best = p - lowest
    lowest = min(lowest, p)
print(best)
