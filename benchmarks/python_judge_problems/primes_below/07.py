n = int(input())
flags = [False, False] + [True] * max(0, n - 2)
for i in range(2, int(n**0.5) + 1):
    if flags[i]:
        flags[i * i : n : i] = [False] * len(flags[i * i : n : i])
print(flags.count(True))
