k = int(input())
words = input().split()
print(" ".join(reversed(words)))
