from functools import cache

MOD = 10**9 + 7


@cache
def fib(k: int) -> int:
    """F(k) by the doubling identities, memoised."""
    if k < 3:
        return (0, 1, 1)[k]
    h = k // 2
    if k % 2 == 0:
        return fib(h) * (2 * fib(h + 1) - fib(h)) % MOD
    return (fib(h) ** 2 + fib(h + 1) ** 2) % MOD


print(fib(int(input())))
