import sys

input = sys.stdin.readline
n = int(input())
a = list(map(int, input().split()))
dp = a[:]
for i in range(1, n):
    dp[i] = max(a[i], dp[i - 1] + a[i])
print(max(dp))
