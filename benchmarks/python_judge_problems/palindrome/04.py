import sys

word = sys.stdin.readline().rstrip("\n")
n = len(word)
ok = all(word[i] == word[n - 1 - i] for i in range(n // 2))
sys.stdout.write(("YES" if ok else "NO") + "\n")
