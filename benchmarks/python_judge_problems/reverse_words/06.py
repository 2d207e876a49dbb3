import sys

lines = sys.stdin.read().splitlines()
k = int(lines[0])
words = lines[1].split()[:k]
words.reverse()
sys.stdout.write(" ".join(words) + "\n")
