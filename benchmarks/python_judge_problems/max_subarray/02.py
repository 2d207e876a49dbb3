n = int(input())
best = cur = 0
for x in map(int, input().split()):
    cur = max(0, cur + x)
    best = max(best, cur)
print(best)
