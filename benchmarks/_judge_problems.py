"""The problems both judging benchmarks grade (``bench_cpp_judge.py``,
``bench_python_judge.py``; not a benchmark: no ``bench_`` prefix).

Eight Codeforces-style stdin/stdout problems. What is language-free is
code, here: each problem's tests' inputs, its reference, and a model of
what each wrong candidate prints, keyed by the candidate's note. What is
written in a language is data: ``<language>_judge_problems/problems.json``
names the problems and, per candidate, its source file and note (``right``
or a model's key), so every candidate's reward is known before any grader
sees it, in every language alike.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import reduce
from pathlib import Path

#: What the program prints for an input (a reference, or a wrong candidate's model).
Model = Callable[[str], str]


@dataclass(frozen=True)
class Candidate:
    source: str
    #: What it prints; ``None``: the reference's answer (a right solution).
    model: Model | None = None
    note: str = "right"


@dataclass(frozen=True)
class Problem:
    name: str
    generate: Callable[[random.Random, int], str]
    reference: Model
    candidates: tuple[Candidate, ...]


@dataclass(frozen=True)
class ProblemCode:
    """What of a problem is code: its tests' inputs, its reference, and what
    each wrong candidate prints (by the candidate's note)."""

    generate: Callable[[random.Random, int], str]
    reference: Model
    wrong: dict[str, Model]


def _array(inp: str) -> list[int]:
    n, *values = map(int, inp.split())
    assert len(values) == n, inp
    return values


def _array_input(values: Sequence[int]) -> str:
    return f"{len(values)}\n{' '.join(map(str, values))}\n"


def _line(*values: object) -> str:
    return " ".join(map(str, values)) + "\n"


# ---------------------------------------------------------------- the problems
# 1. Sum of an array (values up to 1e9 in absolute value: 64-bit sums).


def gen_sum(rng: random.Random, i: int) -> str:
    if i == 0:
        return _array_input([0])
    if i == 1:
        return _array_input([-7])
    n = rng.randint(1, 50)
    if i % 2 == 0:
        return _array_input([rng.randint(0, 100) for _ in range(n)])
    return _array_input([rng.randint(-(10**9), 10**9) for _ in range(n)])


SUM = ProblemCode(
    gen_sum,
    lambda inp: _line(sum(_array(inp))),
    {
        "adds the positive values only": lambda inp: _line(sum(x for x in _array(inp) if x > 0)),
        "off by one: leaves the last value out": lambda inp: _line(sum(_array(inp)[:-1])),
    },
)

# 2. Maximum sum of a non-empty subarray.


def gen_max_subarray(rng: random.Random, i: int) -> str:
    if i == 0:
        return _array_input([-5])
    if i == 1:
        return _array_input([-3, -1, -2])
    n = rng.randint(1, 60)
    low, high = (-100, -1) if i % 3 == 1 else (-100, 100)
    return _array_input([rng.randint(low, high) for _ in range(n)])


def _max_subarray(values: Sequence[int]) -> int:
    best = cur = values[0]
    for x in values[1:]:
        cur = max(x, cur + x)
        best = max(best, cur)
    return best


LLONG_MIN = -(2**63)


def _max_subarray_but_last(values: Sequence[int]) -> int:
    best = LLONG_MIN
    for i in range(len(values)):
        s = 0
        for j in range(i, len(values) - 1):
            s += values[j]
            best = max(best, s)
    return best


MAX_SUBARRAY = ProblemCode(
    gen_max_subarray,
    lambda inp: _line(_max_subarray(_array(inp))),
    {
        "the best starts at 0 (an empty subarray)": lambda inp: _line(
            max(0, _max_subarray(_array(inp)))
        ),
        "off by one: no subarray ends at the last value": lambda inp: _line(
            _max_subarray_but_last(_array(inp))
        ),
    },
)

# 3. How many primes are below n (n <= 100000).

PRIME_LIMIT = 100_000


def _sieve(limit: int) -> list[bool]:
    is_prime = [True] * (limit + 1)
    is_prime[0] = is_prime[1] = False
    for i in range(2, math.isqrt(limit) + 1):
        if is_prime[i]:
            is_prime[i * i :: i] = [False] * len(range(i * i, limit + 1, i))
    return is_prime


IS_PRIME = _sieve(PRIME_LIMIT)
PRIMES = [p for p, prime in enumerate(IS_PRIME) if prime]


def gen_primes(rng: random.Random, i: int) -> str:
    if i < 3:
        return _line((0, 2, 3)[i])
    if i % 2 == 0:  # a prime n: counting up to n inclusive is then wrong
        return _line(rng.choice([p for p in PRIMES if p >= 5]))
    return _line(rng.randint(5, PRIME_LIMIT))


def _primes_below(n: int) -> int:
    return sum(1 for p in PRIMES if p < n)


PRIMES_BELOW = ProblemCode(
    gen_primes,
    lambda inp: _line(_primes_below(int(inp))),
    {
        "off by one: counts the primes up to n inclusive": lambda inp: _line(
            _primes_below(int(inp) + 1)
        ),
        "wrong operator: j * j < i takes the squares of primes for primes": lambda inp: _line(
            _primes_below(int(inp)) + sum(1 for p in PRIMES if p * p < int(inp))
        ),
    },
)

# 4. The words of a line in reverse order.


def gen_reverse_words(rng: random.Random, i: int) -> str:
    if i == 0:
        words = ["abc"]
    elif i == 1:
        words = ["a", "a", "a"]
    else:
        words = [
            "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(1, 8)))
            for _ in range(rng.randint(2, 20))
        ]
    return f"{len(words)}\n{' '.join(words)}\n"


def _words(inp: str) -> list[str]:
    k, *words = inp.split()
    assert len(words) == int(k), inp
    return words


REVERSE_WORDS = ProblemCode(
    gen_reverse_words,
    lambda inp: _line(*reversed(_words(inp))),
    {
        "off by one: the first word is left out": lambda inp: _line(*reversed(_words(inp)[1:])),
        "prints the words in their own order": lambda inp: _line(*_words(inp)),
    },
)

# 5. The gcd of a list.


def gen_gcd(rng: random.Random, i: int) -> str:
    if i == 0:
        return _array_input([12])
    if i == 1:
        return _array_input([7, 7])
    base = 1 if i % 5 == 4 else rng.randint(1, 1000)
    factors = [rng.randint(1, 10**6) for _ in range(rng.randint(2, 30))]
    if i % 3 == 2:  # the last value alone brings the gcd down to base
        factors = [2 * f for f in factors]
        factors[-1] = 1
    elif i % 2 == 0:  # the gcd itself is in the list
        factors[rng.randrange(len(factors))] = 1
    return _array_input([base * f for f in factors])


GCD = ProblemCode(
    gen_gcd,
    lambda inp: _line(reduce(math.gcd, _array(inp))),
    {
        "prints the smallest value": lambda inp: _line(min(_array(inp))),
        "off by one: leaves the last value out": lambda inp: _line(
            reduce(math.gcd, _array(inp)[: max(1, len(_array(inp)) - 1)])
        ),
        "starts from 1 instead of 0": lambda inp: _line(1),
    },
)

# 6. Sort and print.


def gen_sort(rng: random.Random, i: int) -> str:
    if i == 0:
        return _array_input([5])
    if i == 1:
        return _array_input([3, 3, 3, 3])
    values = [rng.randint(-1000, 1000) for _ in range(rng.randint(1, 50))]
    if i % 3 == 0:
        values.sort()
    return _array_input(values)


def _sorted_but_last(values: list[int]) -> list[int]:
    return [*sorted(values[:-1]), values[-1]]


SORT = ProblemCode(
    gen_sort,
    lambda inp: _line(*sorted(_array(inp))),
    {
        "wrong comparator: descending": lambda inp: _line(*sorted(_array(inp), reverse=True)),
        "off by one: sorts all but the last value": lambda inp: _line(
            *_sorted_but_last(_array(inp))
        ),
    },
)

# 7. Fibonacci modulo 1e9+7.

MOD = 1_000_000_007


def gen_fib(rng: random.Random, i: int) -> str:
    if i < 3:
        return _line(i)
    if i % 2 == 0:  # F(n) below the modulus
        return _line(rng.randint(3, 44))
    return _line(rng.randint(45, 100_000))


def _fib(n: int, mod: int = MOD) -> int:
    a, b = 0, 1
    for _ in range(n):
        a, b = b, (a + b) % mod
    return a


FIB = ProblemCode(
    gen_fib,
    lambda inp: _line(_fib(int(inp))),
    {
        "off by one: F(0) = F(1) = 1": lambda inp: _line(_fib(int(inp) + 1)),
        "wrong modulus: 1e9+9": lambda inp: _line(_fib(int(inp), 1_000_000_009)),
    },
)

# 8. Is the word a palindrome?

LETTERS = "abcdefghijklmnopqrstuvwxyz"


def gen_palindrome(rng: random.Random, i: int) -> str:
    if i == 0:
        return "a\n"
    if i == 1:
        return "ab\n"
    if i % 2 == 0:
        half = "".join(rng.choice(LETTERS) for _ in range(rng.randint(1, 15)))
        middle = rng.choice(["", rng.choice(LETTERS)])
        return half + middle + half[::-1] + "\n"
    while True:
        word = "".join(rng.choice(LETTERS) for _ in range(rng.randint(2, 30)))
        if i % 4 == 3:  # same first and last letter
            word = word[-1] + word[1:]
        if word != word[::-1]:
            return word + "\n"


def _yes(condition: bool) -> str:
    return "YES\n" if condition else "NO\n"


PALINDROME = ProblemCode(
    gen_palindrome,
    lambda inp: _yes(inp.strip() == inp.strip()[::-1]),
    {
        "off by one: s[n - i] (the terminating NUL first)": lambda inp: _yes(len(inp.strip()) < 2),
        "compares the first and last letters only": lambda inp: _yes(
            inp.strip()[0] == inp.strip()[-1]
        ),
        "prints Yes / No (wrong case)": lambda inp: (
            "Yes\n" if inp.strip() == inp.strip()[::-1] else "No\n"
        ),
    },
)

#: Each problem's code, by its ``code`` in ``problems.json``.
PROBLEM_CODE = {
    "sum": SUM,
    "max_subarray": MAX_SUBARRAY,
    "primes_below": PRIMES_BELOW,
    "reverse_words": REVERSE_WORDS,
    "gcd": GCD,
    "sort": SORT,
    "fib": FIB,
    "palindrome": PALINDROME,
}


def load_problems(directory: Path) -> tuple[Problem, ...]:
    """The problems of ``directory/problems.json``, in its order: each
    candidate's source read from its file, a wrong one's model (its note
    other than ``"right"``) taken from :data:`PROBLEM_CODE`."""
    problems = []
    for entry in json.loads((directory / "problems.json").read_text(encoding="utf-8")):
        code = PROBLEM_CODE[entry["code"]]
        candidates = []
        for cand in entry["candidates"]:
            source = (directory / cand["source"]).read_text(encoding="utf-8")
            note = cand["note"]
            model = None if note == "right" else code.wrong[note]
            candidates.append(Candidate(source, model, note))
        unused = set(code.wrong) - {c.note for c in candidates}
        assert not unused, f"{entry['name']}: no candidate for the models {sorted(unused)}"
        problems.append(Problem(entry["name"], code.generate, code.reference, tuple(candidates)))
    return tuple(problems)
