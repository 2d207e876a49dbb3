n = int(input())
v = list(map(int, input().split()))
v[: n - 1] = sorted(v[: n - 1])
print(*v)
