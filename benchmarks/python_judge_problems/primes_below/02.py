def is_prime(x):
    if x < 2:
        return False
    d = 2
    while d * d <= x:
        if x % d == 0:
            return False
        d += 1
    return True


n = int(input())
count = 0
for i in range(2, n + 1):
    if is_prime(i):
        count += 1
print(count)
