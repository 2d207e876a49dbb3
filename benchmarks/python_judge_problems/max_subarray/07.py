n = int(input())
a = list(map(int, input().split()))
print(max(sum(a[i:j]) for i in range(n) for j in range(i + 1, n + 1)))
