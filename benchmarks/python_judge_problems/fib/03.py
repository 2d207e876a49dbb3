import sys

MOD = 1_000_000_007


def fib_pair(n):
    """(F(n), F(n + 1)) by fast doubling."""
    if n == 0:
        return 0, 1
    a, b = fib_pair(n >> 1)
    c = a * ((2 * b - a) % MOD) % MOD
    d = (a * a + b * b) % MOD
    return (d, (c + d) % MOD) if n & 1 else (c, d)


print(fib_pair(int(sys.stdin.readline()))[0])
