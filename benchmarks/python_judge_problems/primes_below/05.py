n = int(input())
primes = 0
for i in range(2, n):
    j = 2
    while j * j < i:
        if i % j == 0:
            break
        j += 1
    else:
        primes += 1
print(primes)
