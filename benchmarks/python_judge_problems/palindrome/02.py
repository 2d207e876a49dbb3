import sys

s = sys.stdin.readline()  # keeps its "\n", as a C string keeps its NUL
n = len(s) - 1  # the word's length
pal = True
for i in range(n // 2):
    if s[i] != s[n - i]:  # s[n] is the "\n"
        pal = False
print("YES" if pal else "NO")
