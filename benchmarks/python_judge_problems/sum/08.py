tokens = open(0).read().split()
n = int(tokens[0])
print(sum(int(t) for t in tokens[1 : 1 + n]))
