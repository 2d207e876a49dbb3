"""C++ contest grading of a training step: SandboxFusion's own server driven
as verl drives it, against our local backend's ``/run_code`` driven the same
way, and against one documented ``grade_batch`` call (not a test).

Why: verl's sandbox_fusion reward sends one ``POST /run_code`` per test case.
This measures that pattern on SandboxFusion (run here from its repository by
``_sandbox_fusion_peer.py``: its own server, venv and ``local`` config,
isolation ``none``) and on ours (``_sides.ours_backend``), and what grading
each group in one call saves (``ContestReward``, the judge route).

The workload: 8 prompts x 8 distinct C++ candidates x 10 tests,
Codeforces-style stdin/stdout programs (``#include <bits/stdc++.h>``), right
and wrong ones, each wrong one with a Python model of what it prints, so
every candidate's reward is known beforehand (the problems' names and
candidates are data, ``cpp_judge_problems/problems.json`` and a ``.cpp``
file per candidate beside it; their tests' inputs and the models are code,
here). Every way's rewards must equal those, and any timeout, HTTP,
compile, run or infra error is a failure: either makes the run exit 1. The
ways take turns in interleaved rounds, each round's and way's sources
carrying a comment of their own, so our compile cache is cold for every way
and round. ``--compile-timeout`` (default 120 s,
verl's is 10) goes in both sides' bodies: SandboxFusion's compile timeout is
wall time, which 32 concurrent compiles on a small machine outlast; ours
counts CPU time. A limit decides what is killed, never how fast anything
runs.

Targets (medians of rounds): SandboxFusion / ours ``/run_code`` at least 3x,
SandboxFusion / ours ``grade_batch`` at least 20x. ``--quick``: 2 prompts x
4 candidates x 3 tests, 1 round (a smoke run).

    python benchmarks/bench_cpp_judge.py [--rounds 2] [--threads 32]
        [--prompts 8] [--candidates 8] [--tests 10] [--quick]
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import random
import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import reduce
from pathlib import Path
from typing import Any

import httpx
from _results import add_out_option, write_results
from _sandbox_fusion_peer import (
    DEFAULT_CHECKOUT,
    checkout_commit,
    ensure_sandbox_fusion_venv,
    run_code,
    sandbox_fusion_checkout,
    sandbox_fusion_repo,
    sandbox_fusion_server,
)
from _sides import ours_backend

from collimate_rl import CollimateClient, ContestReward, grade_batch

#: What the program prints for an input (a reference, or a wrong candidate's model).
Model = Callable[[str], str]

#: verl's extra wait for an answer beyond compile and run (its API_TIMEOUT).
API_TIMEOUT_S = 10

WAYS = ("sandbox-fusion /run_code", "ours /run_code", "ours grade_batch")
#: The comment tag of each way (keeps each way's sources its own).
TAGS = ("sandbox-fusion", "ours-run-code", "ours-grade-batch")

#: Targets: sandbox-fusion's seconds over ours (median of rounds).
TARGETS = {"ours /run_code": 3.0, "ours grade_batch": 20.0}

#: A /run_code answer's kinds that are the program's own (a test passed or not).
PROGRAM_KINDS = ("pass", "wrong")


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


#: The problems' names and candidates: ``problems.json``, and a source file
#: per candidate.
PROBLEMS_DIR = Path(__file__).resolve().parent / "cpp_judge_problems"


def cpp(body: str) -> str:
    """A source: the header every candidate starts with, then ``body``."""
    return "#include <bits/stdc++.h>\n" + body.lstrip("\n")


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


def load_problems(directory: Path = PROBLEMS_DIR) -> tuple[Problem, ...]:
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


PROBLEMS = load_problems()


# ---------------------------------------------------------------- the workload


@dataclass(frozen=True)
class Prompt:
    name: str
    tests: list[tuple[str, str]]  # (input, expected output)
    sources: list[str]  # one per candidate (before the round's tag)
    notes: list[str]
    expected: list[float]  # each candidate's reward


def _verl_pass(stdout: str, expected: str) -> bool:
    return stdout.rstrip("\n") == expected.rstrip("\n")


def build_workload(prompts: int, candidates: int, tests: int) -> list[Prompt]:
    """``prompts`` prompts (the problems in turn, each with its own seeded
    tests), ``candidates`` distinct sources each, and every candidate's
    expected reward from the Python models."""
    out = []
    for p in range(prompts):
        problem = PROBLEMS[p % len(PROBLEMS)]
        rng = random.Random(f"bench_cpp_judge/{problem.name}/{p}")
        inputs = [problem.generate(rng, i) for i in range(tests)]
        answers = [problem.reference(inp) for inp in inputs]
        sources, notes, expected = [], [], []
        for c in range(candidates):
            cand = problem.candidates[c % len(problem.candidates)]
            source = cand.source
            if p >= len(PROBLEMS):
                source += f"// prompt {p}\n"
            if c >= len(problem.candidates):
                source += f"// sample {c}\n"
            model = cand.model or problem.reference
            passed = 0
            for inp, answer in zip(inputs, answers, strict=True):
                printed = model(inp)
                verl = _verl_pass(printed, answer)
                # the judge compares tokens: the two must agree on every pair
                assert verl == (printed.split() == answer.split()), (problem.name, c, inp)
                passed += verl
            sources.append(source)
            notes.append(cand.note)
            expected.append(passed / tests)
        assert len(set(sources)) == len(sources), f"{problem.name}: candidates not distinct"
        label = problem.name if p < len(PROBLEMS) else f"{problem.name} #{p}"
        out.append(Prompt(label, list(zip(inputs, answers, strict=True)), sources, notes, expected))
    return out


def tagged(source: str, way: int, round_no: int) -> str:
    """The source as submitted by ``way`` in round ``round_no``: nothing is
    shared with any other way or round (a cold compile cache)."""
    return f"{source}// {TAGS[way]} round {round_no}\n"


# ---------------------------------------------------------------- the ways


@dataclass
class WayRun:
    seconds: float
    rewards: list[float]
    failures: Counter[str]
    first_message: dict[str, str]
    cache: dict[str, int] | None = None


def classify(answer: dict[str, Any], expected: str) -> str:
    """One ``/run_code`` answer: ``pass``, ``wrong`` (the program's own
    failure) or the kind of failure that is not the program's."""
    if answer.get("status") == "SandboxError":
        return "SandboxError"
    compiled = answer.get("compile_result") or {}
    if compiled.get("status") == "TimeLimitExceeded":
        return "compile timeout"
    if compiled and (compiled.get("status") != "Finished" or compiled.get("return_code") != 0):
        return "compile error"
    run = answer.get("run_result") or {}
    if run.get("status") == "TimeLimitExceeded":
        return "run timeout"
    if run.get("status") != "Finished" or run.get("return_code") != 0:
        return "run error"
    if answer.get("status") == "Success" and _verl_pass(str(run.get("stdout")), expected):
        return "pass"
    return "wrong"


def _summary(answer: dict[str, Any]) -> str:
    text = repr(answer)
    return text if len(text) < 600 else text[:600] + "..."


def drive_run_code(
    url: str,
    workload: list[Prompt],
    way: int,
    round_no: int,
    threads: int,
    compile_timeout: float,
    run_timeout: float,
) -> WayRun:
    """verl's pattern: one ``/run_code`` per (candidate, test), ``threads``
    threads, a keep-alive connection each, verl's wait for an answer."""
    host, port = url.removeprefix("http://").split(":")
    wait = compile_timeout + run_timeout + API_TIMEOUT_S
    tasks: list[tuple[int, dict[str, Any], str]] = []
    slot = 0
    for prompt in workload:
        for source in prompt.sources:
            code = tagged(source, way, round_no)
            for inp, answer in prompt.tests:
                body = {
                    "code": code,
                    "stdin": inp,
                    "compile_timeout": compile_timeout,
                    "run_timeout": run_timeout,
                    "memory_limit_MB": 1024,
                    "language": "cpp",
                    "files": {},
                    "fetch_files": [],
                }
                tasks.append((slot, body, answer))
            slot += 1
    kinds: list[str] = [""] * len(tasks)
    first_message: dict[str, str] = {}
    lock = threading.Lock()
    left = iter(range(len(tasks)))

    def worker() -> None:
        conn: http.client.HTTPConnection | None = None
        while True:
            with lock:
                i = next(left, None)
            if i is None:
                break
            _, body, expected = tasks[i]
            if conn is None:
                conn = http.client.HTTPConnection(host, int(port), timeout=wait)
            message = ""
            try:
                answer = run_code(conn, body)
                kind = classify(answer, expected)
                message = _summary(answer)
            except TimeoutError as exc:
                kind, message = "client timeout", f"no answer within {wait:g} s ({exc})"
            except RuntimeError as exc:  # run_code: an HTTP status other than 200
                kind, message = "http error", str(exc)[:600]
            except (OSError, http.client.HTTPException, ValueError) as exc:
                kind, message = type(exc).__name__, str(exc)[:600]
            if kind not in PROGRAM_KINDS and conn is not None:
                conn.close()
                conn = None
            with lock:
                kinds[i] = kind
                if kind not in PROGRAM_KINDS:
                    first_message.setdefault(kind, message)
        if conn is not None:
            conn.close()

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    started = time.perf_counter()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    seconds = time.perf_counter() - started
    passed = [0] * slot
    tests = [0] * slot
    for (cand, _, _), kind in zip(tasks, kinds, strict=True):
        passed[cand] += kind == "pass"
        tests[cand] += 1
    failures = Counter(k for k in kinds if k not in PROGRAM_KINDS)
    return WayRun(
        seconds, [p / t for p, t in zip(passed, tests, strict=True)], failures, first_message
    )


def specs_of(workload: list[Prompt]) -> list[ContestReward]:
    """One ContestReward per prompt, listed once per candidate."""
    specs = []
    for prompt in workload:
        spec = ContestReward(
            [{"input": inp, "output": out} for inp, out in prompt.tests],
            language="cpp",
            time_limit=2,
            memory_limit_mb=256,
        )
        specs.extend([spec] * len(prompt.sources))
    return specs


def drive_grade_batch(url: str, workload: list[Prompt], way: int, round_no: int) -> WayRun:
    """The documented call, timed."""
    candidates = [tagged(s, way, round_no) for prompt in workload for s in prompt.sources]
    specs = specs_of(workload)
    failures: Counter[str] = Counter()
    first_message: dict[str, str] = {}
    with CollimateClient(url) as client:
        started = time.perf_counter()
        try:
            results = grade_batch(client, "py", candidates, specs)
        except Exception as exc:  # an infra error (on_infra_error="raise") or worse
            seconds = time.perf_counter() - started
            failures["grade_batch raised"] += 1
            first_message["grade_batch raised"] = f"{type(exc).__name__}: {exc}"[:600]
            return WayRun(seconds, [math.nan] * len(candidates), failures, first_message)
        seconds = time.perf_counter() - started
    rewards = []
    for result in results:
        if result.infra_error or result.verdict == "infra_error":
            failures["infra_error"] += 1
            first_message.setdefault("infra_error", str(result.error or result.detail)[:600])
        elif result.detail.get("load_error"):
            failures["compile error"] += 1
            first_message.setdefault("compile error", str(result.detail["load_error"])[:600])
        rewards.append(result.reward)
    return WayRun(seconds, rewards, failures, first_message)


# ---------------------------------------------------------------- helpers


def compile_cache(url: str) -> dict[str, int]:
    health = httpx.get(f"{url}/v1/health", timeout=30).json()
    counters: dict[str, int] = health.get("compile_cache") or {}
    return counters


def cache_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after.get(k, 0) - before.get(k, 0) for k in ("compiles", "hits", "joined")}


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def check_rewards(way: str, round_no: int, run: WayRun, workload: list[Prompt]) -> list[str]:
    """Differences between a way's rewards and the expected ones (printed)."""
    expected = [r for prompt in workload for r in prompt.expected]
    where = [
        (prompt.name, c, prompt.notes[c]) for prompt in workload for c in range(len(prompt.sources))
    ]
    wrong = []
    for (name, c, note), want, got in zip(where, expected, run.rewards, strict=True):
        if not (got == want or abs(got - want) < 1e-9):
            wrong.append(
                f"{way}, round {round_no}: {name} candidate {c} ({note}): "
                f"expected {want:g}, got {got:g}"
            )
    if wrong:
        print(f"  !! REWARD MISMATCH: {len(wrong)} of {len(expected)} candidates", flush=True)
        for line in wrong[:20]:
            print(f"     {line}", flush=True)
        if len(wrong) > 20:
            print(f"     ... and {len(wrong) - 20} more", flush=True)
    return wrong


def warm_up(sf_url: str, ours_url: str, compile_timeout: float, run_timeout: float) -> None:
    """One request each of a program outside the workload (SandboxFusion
    probes its g++ flags on its first C++ request), and one grade_batch."""
    source = cpp(
        "int main() { long long a, b; std::cin >> a >> b; std::cout << a + b << '\\n'; }\n"
        "// warm-up\n"
    )
    body = {
        "code": source,
        "stdin": "20 22\n",
        "compile_timeout": compile_timeout,
        "run_timeout": run_timeout,
        "memory_limit_MB": 1024,
        "language": "cpp",
        "files": {},
        "fetch_files": [],
    }
    for url in (sf_url, ours_url):
        host, port = url.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=300)
        try:
            kind = classify(run_code(conn, body), "42\n")
        finally:
            conn.close()
        if kind != "pass":
            raise RuntimeError(f"warm-up /run_code on {url} answered {kind}")
    spec = ContestReward([{"input": "1 2\n", "output": "3\n"}], language="cpp")
    with CollimateClient(ours_url) as client:
        (result,) = grade_batch(client, "py", [source + "// grade_batch\n"], spec)
    if result.reward != 1.0:
        raise RuntimeError(f"warm-up grade_batch: {result}")


def _ratio_line(name: str, sf: list[float], ours: list[float], target: float) -> str:
    med = statistics.median(sf) / statistics.median(ours)
    per_round = [a / b for a, b in zip(sf, ours, strict=True)]
    verdict = "met" if med >= target else "NOT met"
    spread = ", ".join(f"{r:.1f}x" for r in per_round)
    return (
        f"sandbox-fusion / {name}: {med:.1f}x (medians of rounds; rounds {spread}); "
        f"target >= {target:g}x: {verdict}"
    )


#: The ways as the charts name them.
LABELS = {
    "sandbox-fusion /run_code": "SandboxFusion /run_code (its own server)",
    "ours /run_code": "ours /run_code (same client, same requests)",
    "ours grade_batch": "ours grade_batch (ContestReward)",
}


def charts(times: dict[str, list[float]], what: str) -> list[dict[str, Any]]:
    """The chart entries of a run: each way's seconds, round by round and
    their median, and SandboxFusion's time over each of ours against its
    target."""
    rounds = len(times[WAYS[0]])
    categories = [f"round {r}" for r in range(1, rounds + 1)] + ["median"]
    sf = statistics.median(times[WAYS[0]])
    return [
        {
            "name": "seconds",
            "kind": "bar",
            "title": f"C++ judging: {what}",
            "categories": categories,
            "series": [
                {"name": LABELS[way], "values": [*times[way], statistics.median(times[way])]}
                for way in WAYS
            ],
            "y_label": "seconds for the whole workload, lower is better",
            "x_label": "round (compile cache cold for every way in every round)",
        },
        {
            "name": "speed-up",
            "kind": "bar",
            "title": "SandboxFusion's time over ours (median of rounds)",
            "categories": [LABELS[way] for way in TARGETS],
            "series": [
                {
                    "name": "measured",
                    "values": [sf / statistics.median(times[way]) for way in TARGETS],
                },
                {"name": "target", "values": list(TARGETS.values())},
            ],
            "y_label": "times faster than SandboxFusion (x)",
        },
    ]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=32, help="for the /run_code ways")
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--candidates", type=int, default=8, help="per prompt")
    ap.add_argument("--tests", type=int, default=10, help="per prompt")
    ap.add_argument("--compile-timeout", type=float, default=120.0)
    ap.add_argument("--run-timeout", type=float, default=10.0)
    ap.add_argument("--quick", action="store_true", help="2 x 4 x 3, 1 round (a smoke run)")
    ap.add_argument(
        "--sf-repo", type=Path, default=None,
        help="SandboxFusion's git repository (or $COLLIMATE_SANDBOX_FUSION_REPO)",
    )  # fmt: skip
    add_out_option(ap)
    args = ap.parse_args(argv)
    if args.quick:
        args.prompts, args.candidates, args.tests, args.rounds = 2, 4, 3, 1

    workload = build_workload(args.prompts, args.candidates, args.tests)
    n_cand = sum(len(p.sources) for p in workload)
    n_runs = sum(len(p.sources) * len(p.tests) for p in workload)
    print(
        f"C++ judging: {args.prompts} prompts x {args.candidates} candidates x {args.tests} tests"
        f" = {n_runs} runs of {n_cand} distinct programs per way; {args.rounds} round(s);"
        f" /run_code from {args.threads} threads (compile_timeout {args.compile_timeout:g} s,"
        f" run_timeout {args.run_timeout:g} s)"
    )
    print("expected rewards (from the Python models), one column per candidate:")
    for prompt in workload:
        cells = " ".join(f"{r:4.2f}" for r in prompt.expected)
        print(f"  {prompt.name:<18} {cells}")

    checkout = sandbox_fusion_checkout(sandbox_fusion_repo(args.sf_repo), DEFAULT_CHECKOUT)
    venv = ensure_sandbox_fusion_venv(checkout)
    times: dict[str, list[float]] = {w: [] for w in WAYS}
    failures: dict[str, Counter[str]] = {w: Counter() for w in WAYS}
    messages: dict[str, dict[str, str]] = {w: {} for w in WAYS}
    mismatches: list[str] = []
    with sandbox_fusion_server(checkout, venv) as sf_url, ours_backend() as ours_url:
        health = httpx.get(f"{ours_url}/v1/health", timeout=30).json()
        print(
            f"sandbox-fusion: {sf_url} (SandboxFusion {checkout_commit(checkout)[:12]}, "
            f"isolation none); ours: {ours_url} (collimate-rl {health.get('version')}, "
            f"isolation {health.get('isolation')})"
        )
        warm_up(sf_url, ours_url, args.compile_timeout, args.run_timeout)
        print(f"warm-up done; compile_cache {compile_cache(ours_url)}", flush=True)
        for r in range(1, args.rounds + 1):
            print(f"\nround {r} (load average {load()})", flush=True)
            for w, way in enumerate(WAYS):
                url = sf_url if w == 0 else ours_url
                before = compile_cache(ours_url) if w else {}
                if w == 2:
                    run = drive_grade_batch(url, workload, w, r)
                else:
                    run = drive_run_code(
                        url,
                        workload,
                        w,
                        r,
                        args.threads,
                        args.compile_timeout,
                        args.run_timeout,
                    )
                if w:
                    run.cache = cache_delta(before, compile_cache(ours_url))
                times[way].append(run.seconds)
                failures[way].update(run.failures)
                for kind, message in run.first_message.items():
                    messages[way].setdefault(kind, message)
                bad = sum(run.failures.values())
                line = f"  {way:<26} {run.seconds:8.2f} s   failures {bad}"
                if run.failures:
                    line += " (" + ", ".join(f"{k}: {n}" for k, n in run.failures.items()) + ")"
                if run.cache is not None:
                    c = run.cache
                    line += (
                        f"; compile_cache +{c['compiles']} compiles, +{c['hits']} hits,"
                        f" +{c['joined']} joined"
                    )
                print(line, flush=True)
                mismatches += check_rewards(way, r, run, workload)

    print(f"\nsummary: {n_cand} candidates x {args.tests} tests, {args.rounds} round(s)")
    print(f"  {'way':<26} {'median s':>9}   rounds")
    for way in WAYS:
        rounds = ", ".join(f"{t:.2f}" for t in times[way])
        print(f"  {way:<26} {statistics.median(times[way]):>9.2f}   {rounds}")
    sf = times[WAYS[0]]
    for way, target in TARGETS.items():
        print("  " + _ratio_line(way, sf, times[way], target))
    total_failures = 0
    for way in WAYS:
        if failures[way]:
            total_failures += sum(failures[way].values())
            print(f"  FAILURES in {way}: {dict(failures[way])}")
            for kind, message in messages[way].items():
                print(f"    first {kind}: {message}")
    if not total_failures:
        print("  failures: none (no SandboxError, timeout, HTTP, compile or infra error)")
    if mismatches:
        print(f"  REWARD MISMATCHES: {len(mismatches)} (listed above): FAILED")
    else:
        print("  rewards: every way, every round equal the expected rewards")
    what = f"{n_cand} C++ candidates x {args.tests} tests, {args.threads} threads for /run_code"
    figures = {
        "seconds": times,
        "sandbox_fusion_commit": checkout_commit(checkout)[:12],
        "failures": {way: dict(f) for way, f in failures.items()},
        "reward_mismatches": len(mismatches),
    }
    write_results(__file__, args, figures, charts(times, what))
    return 1 if mismatches or total_failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
