k = int(input())
words = input().split()
for i in range(k):
    end = "\n" if i == k - 1 else " "
    print(words[k - 1 - i], end=end)
