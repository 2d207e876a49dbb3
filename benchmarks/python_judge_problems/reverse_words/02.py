k = int(input())
words = input().split()
out = []
for i in range(k - 1, 0, -1):
    out.append(words[i])
print(" ".join(out))
