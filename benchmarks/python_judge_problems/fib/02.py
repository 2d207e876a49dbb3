n = int(input())
M = 10**9 + 7
f = [0] * (n + 2)
f[0] = 1
f[1] = 1
for i in range(2, n + 1):
    f[i] = (f[i - 1] + f[i - 2]) % M
print(f[n])
