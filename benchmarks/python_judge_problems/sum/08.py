with open(0) as stdin:
    tokens = stdin.read().split()
n = int(tokens[0])
print(sum(int(t) for t in tokens[1 : 1 + n]))
