from collections import Counter

input()
counts = Counter(map(int, input().split()))
out = []
for value in sorted(counts):
    out.extend([value] * counts[value])
print(*out)
