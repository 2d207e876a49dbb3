n = int(input())
s = 0
for x in input().split():
    s += int(x)
print(s)
