from collections import deque

input()
d = deque()
for word in input().split():
    d.appendleft(word)
print(*d)
