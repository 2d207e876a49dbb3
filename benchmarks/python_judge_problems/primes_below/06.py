def main():
    n = int(input())
    primes = []
    for candidate in range(2, n):
        for p in primes:
            if p * p > candidate:
                primes.append(candidate)
                break
            if candidate % p == 0:
                break
        else:
            primes.append(candidate)
    print(len(primes))


main()
