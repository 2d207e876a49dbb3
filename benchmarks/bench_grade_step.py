"""A whole training step in one call: 32 prompts x 8 completions across the
dataset formats, graded by one ``grade_batch`` call, against the same rows
graded one ``grade`` call at a time (not a test).

Why: a trainer that hands over a whole step at once lets every completion
be packed, across prompts and dataset formats.

The prompts are rows in their datasets' own shapes, read with
``reward_spec_from_ground_truth``: MBPP (``test_list`` of asserts), KodCode
(a pytest module importing ``solution``), APPS (``fn_name``, ``inputs``,
``outputs``) and open-r1 (``test_cases`` of stdin/stdout), eight prompts of
each; every prompt has eight completions (right, right another way, off by
one, wrong, crashing, slow, ...; ``--loopers N``: in N of the APPS prompts,
one that never ends). Our local backend runs as a process of its own.
Per round, in this order: one call, ``grade_batch(client, "py",
completions, specs, seeds=..., concurrency=16)`` (specs: one per
completion, packed across prompts), then the same 256 rows, one ``grade``
call after another. Both must give the same rewards (checked). Prints the
grades/s of each and their ratio.

    python benchmarks/bench_grade_step.py [--rounds 3] [--prompts 32] [--completions 8]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

from _results import add_out_option, write_results
from _sides import ours_backend

from collimate_rl import (
    CollimateClient,
    GradeResult,
    RewardSpec,
    grade,
    grade_batch,
    reward_spec_from_ground_truth,
)

SEED = "cd" * 32


def mbpp(k: int) -> tuple[dict[str, Any], list[str]]:
    row = {
        "task_id": 900 + k,
        "test_list": [f"assert shift({x}) == {x + k}" for x in (1, 5, -3, 40)],
    }
    right = f"def shift(x):\n    return x + {k}\n"
    return row, [
        right,
        f"def shift(x):\n    y = x\n    for _ in range({k}):\n        y += 1\n    return y\n",
        f"def shift(x):\n    return x + {k + 1}\n",
        f"def shift(x):\n    return x + {k} if x > 0 else x\n",  # half right
        "def shift(x):\n    return None\n",
        "def shift(x):\n    raise RuntimeError('no')\n",
        "import sys\ndef shift(x):\n    return int(sys.argv[0] == '') + x\n",
        right,
    ]


def kodcode(k: int) -> tuple[dict[str, Any], list[str]]:
    test = (
        "from solution import scale\nimport pytest\n\n"
        f"def test_small():\n    assert scale(2) == {2 * (k + 1)}\n\n"
        f"def test_zero():\n    assert scale(0) == 0\n\n"
        f"@pytest.mark.parametrize('x', [1, 3, 7])\n"
        f"def test_many(x):\n    assert scale(x) == x * {k + 1}\n"
    )
    right = f"def scale(x):\n    return x * {k + 1}\n"
    return {"question_id": f"Leetcode_{k}", "test": test}, [
        right,
        f"def scale(x):\n    return sum([x] * {k + 1})\n",
        f"def scale(x):\n    return x * {k + 2}\n",
        "def scale(x):\n    return 0\n",  # only test_zero
        "def scale(x):\n    return x\n",
        "x = (\n",  # does not compile
        f"def scale(x):\n    return x * {k + 1} if x < 3 else 0\n",
        right,
    ]


LOOPER = "def clip(x, k):\n    while True:\n        pass\n"  # (its budget, then 0.0)


def apps(k: int) -> tuple[dict[str, Any], list[str]]:
    io = {
        "fn_name": "clip",
        "inputs": [[x, k] for x in (-5, 0, 3, 10)],
        "outputs": [[max(x, k)] for x in (-5, 0, 3, 10)],
    }
    right = "def clip(x, k):\n    return max(x, k)\n"
    return {"problem_id": 700 + k, "input_output": json.dumps(io)}, [
        right,
        "class Solution:\n    def clip(self, x, k):\n        return x if x > k else k\n",
        "def clip(x, k):\n    return min(x, k)\n",
        "def clip(x, k):\n    return x\n",
        "import time\ndef clip(x, k):\n    time.sleep(0.01)\n    return max(x, k)\n",  # slow
        "def clip(x, k):\n    return k\n",
        "def clip(*a):\n    return max(a)\n",
        right,
    ]


def openr1(k: int) -> tuple[dict[str, Any], list[str]]:
    cases = [
        {"input": f"{n}\n", "output": f"{n * n + k}\n", "type": "stdin_stdout"}
        for n in (1, 2, 7, 12)
    ]
    right = f"n = int(input())\nprint(n * n + {k})\n"
    return {"language": "python", "test_cases": cases}, [
        right,
        f"import sys\nn = int(sys.stdin.read())\nsys.stdout.write(str(n ** 2 + {k}) + '\\n')\n",
        f"n = int(input())\nprint(n * n + {k + 1})\n",
        f"n = int(input())\nprint(n * n + {k} if n < 5 else 0)\n",
        "print('hello')\n",
        "import os\nos._exit(3)\n",
        f"n = int(input())\nprint(n + n + {k})\n",  # right for n = 2 only
        right,
    ]


def step(prompts: int, completions: int, loopers: int) -> tuple[list[str], list[RewardSpec]]:
    makers = [mbpp, kodcode, apps, openr1]
    cands: list[str] = []
    specs: list[RewardSpec] = []
    for p in range(prompts):
        row, answers = makers[p % len(makers)](p // len(makers))
        if makers[p % len(makers)] is apps and p // len(makers) < loopers:
            answers = [*answers[:4], LOOPER, *answers[5:]]
        spec = reward_spec_from_ground_truth(row)
        for i in range(completions):
            cands.append(answers[i % len(answers)])
            specs.append(spec)
    return cands, specs


def one_call(
    client: CollimateClient, cands: list[str], specs: list[RewardSpec], timeout: int
) -> tuple[float, list[GradeResult]]:
    t0 = time.perf_counter()
    results = grade_batch(
        client, "py", cands, specs, seeds=[SEED] * len(cands), concurrency=16,
        timeout_seconds=timeout,
    )  # fmt: skip
    return time.perf_counter() - t0, results


def one_at_a_time(
    client: CollimateClient, cands: list[str], specs: list[RewardSpec], timeout: int
) -> tuple[float, list[GradeResult]]:
    t0 = time.perf_counter()
    results = [
        grade(client, "py", c, s, seed=SEED, timeout_seconds=timeout)
        for c, s in zip(cands, specs, strict=True)
    ]
    return time.perf_counter() - t0, results


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--completions", type=int, default=8)
    ap.add_argument("--timeout", type=int, default=2, help="each candidate's (the loopers')")
    ap.add_argument(
        "--loopers", type=int, default=0, help="APPS prompts with a completion that never ends"
    )
    add_out_option(ap)
    args, _ = ap.parse_known_args(argv)

    cands, specs = step(args.prompts, args.completions, args.loopers)
    kinds = sorted({type(s).__name__ for s in specs})
    n = len(cands)
    print(f"{args.prompts} prompts x {args.completions} completions = {n} rows; kinds {kinds}")
    print(f"completions that loop until their {args.timeout} s budget: {args.loopers}")
    times: dict[str, list[float]] = {"one call": [], "one grade at a time": []}
    agree = True
    with ours_backend() as url, CollimateClient(url) as client:
        grade_batch(client, "py", cands[:16], specs[:16])  # warm-up
        for rnd in range(1, args.rounds + 1):
            dt_b, batch = one_call(client, cands, specs, args.timeout)
            dt_s, alone = one_at_a_time(client, cands, specs, args.timeout)
            times["one call"].append(dt_b)
            times["one grade at a time"].append(dt_s)
            same = [r.reward for r in batch] == [r.reward for r in alone]
            agree = agree and same
            packed = sum("pack" in r.raw for r in batch)
            print(
                f"round {rnd}: one call {n / dt_b:6.1f}/s ({packed}/{n} in packs)  "
                f"one grade at a time {n / dt_s:6.1f}/s  rewards agree: {same}",
                flush=True,
            )
    med = {k: statistics.median(v) for k, v in times.items()}
    mean_reward = sum(r.reward for r in batch) / n
    print("median grades/s: " + ", ".join(f"{k} {n / v:.1f}" for k, v in med.items()))
    print(f"mean reward {mean_reward:.3f}; rewards identical both ways: {agree}")
    print(
        f"ratio one call / one grade at a time: {med['one grade at a time'] / med['one call']:.1f}x"
    )
    figures = {
        "rows": n,
        "prompts": args.prompts,
        "completions": args.completions,
        "loopers": args.loopers,
        "grades_per_s": {k: [n / t for t in v] for k, v in times.items()},
        "median_grades_per_s": {k: n / v for k, v in med.items()},
        "mean_reward": mean_reward,
        "rewards_agree": agree,
    }
    write_results(__file__, args, figures, [])
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
