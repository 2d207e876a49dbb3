"""A one-command tour: grade a GRPO group in sandboxes on this machine.

``hatch run demo`` (or ``python -m collimate_rl.demo``) starts the embedded
local backend, grades one group of eight model completions (right, partly
right, wrong, crashing, looping, noisy) with a property reward under common
random numbers, and prints what a trainer would receive. It needs no KVM, no
GPU and no network; pass ``--url`` (or ``--api-key``) to run the same group
against a real daemon or the gateway instead.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Iterator, Sequence

from .batch import grade_batch
from .grading import GradeResult
from .rewards import PropertyReward, extract_code
from .seeds import group_seeds
from .transport import SessionClient, connect

#: The task: count the vowels of a string. Each completion is what a policy
#: might write; the reward is the share of 16 seeded random inputs on which it
#: agrees with the reference.
REFERENCE = "    return sum(c in 'aeiouAEIOU' for c in x)"
GENERATOR = "''.join(random.choice('abcdEIOUxyz') for _ in range(8))"

GROUP: tuple[tuple[str, str], ...] = (
    ("correct", "def solve(x):\n    return sum(ch in 'aeiouAEIOU' for ch in x)\n"),
    ("forgets 'U'", "def solve(x):\n    return sum(ch in 'aeiouAEIO' for ch in x)\n"),
    ("off by one", "def solve(x):\n    return sum(ch in 'aeiouAEIOU' for ch in x) + 1\n"),
    (
        "correct, chatty",
        "import sys\n"
        "def solve(x):\n"
        "    print('thinking...', file=sys.stderr)\n"
        "    return len([c for c in x if c.lower() in 'aeiou'])\n",
    ),
    ("crashes", "def solve(x):\n    return x[100]\n"),
    ("loops forever", "def solve(x):\n    while True:\n        pass\n"),
    ("no solve()", "print('I forgot to define the function')\n"),
    (
        "correct, markdown",
        "Here you go:\n```python\ndef solve(x):\n    return sum(map(x.count, 'aeiouAEIOU'))\n```\n",
    ),
)


@contextlib.contextmanager
def _client(args: argparse.Namespace) -> Iterator[tuple[SessionClient, str]]:
    """A client for the chosen backend and a line saying what it is; the
    embedded backend is started here and always stopped on the way out."""
    if args.url or args.api_key:
        with contextlib.closing(connect(args.url, api_key=args.api_key)) as client:
            yield client, f"remote: {args.url or 'gateway'}"
        return
    from .local_backend import LocalCollimateBackend

    with LocalCollimateBackend(isolation=args.isolation) as backend:
        health = backend.health()
        isolation = health.get("isolation_detail") or health.get("isolation")
        where = f"embedded local backend, isolation: {isolation}"
        with contextlib.closing(connect(backend.base_url)) as local:
            yield local, where


def _print_results(labels: Sequence[str], results: Sequence[GradeResult], elapsed: float) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        for label, res in zip(labels, results, strict=True):
            print(
                f"{label:>20}  reward={res.reward:.3f}  verdict={res.verdict:<11}"
                f" exit={res.exit_code}"
            )
    else:
        table = Table(title="one GRPO group, graded in sandboxes")
        for col in ("completion", "reward", "verdict", "exit", "exec ms"):
            table.add_column(col, justify="right" if col != "completion" else "left")
        for label, res in zip(labels, results, strict=True):
            table.add_row(
                label,
                f"{res.reward:.3f}",
                res.verdict,
                str(res.exit_code),
                f"{res.exec_time_ms or 0.0:.1f}",
            )
        Console().print(table)
    mean = sum(r.reward for r in results) / len(results)
    print(f"\n{len(results)} grades in {elapsed * 1000:.0f} ms; group mean reward {mean:.3f}")
    print(f"shared CRN seed: {results[0].seed} (seed_ack: {results[0].seed_ack})")
    print("GRPO advantages:", ", ".join(f"{r.reward - mean:+.2f}" for r in results))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m collimate_rl.demo", description=__doc__)
    parser.add_argument("--url", help="grade on this daemon instead of the embedded backend")
    parser.add_argument("--api-key", help="grade on the gateway with this col_* key")
    parser.add_argument("--template", default="dkr-python311", help="python template to grade in")
    parser.add_argument(
        "--isolation",
        default="auto",
        choices=("auto", "namespaces", "process"),
        help="isolation of the embedded backend (auto: namespaces when this machine allows)",
    )
    args = parser.parse_args(argv)

    spec = PropertyReward(reference=REFERENCE, generator=GENERATOR, k=16)
    labels = [label for label, _ in GROUP]
    # What a framework adapter does first: pull the code out of the completion.
    candidates = [extract_code(completion) for _, completion in GROUP]
    # Common random numbers: every member of the group sees the same 16
    # inputs, so reward differences come from the code, not from the draw.
    seeds = group_seeds(len(candidates), "crn")
    with _client(args) as (client, where):
        print(f"grading {len(candidates)} completions on {where}")
        start = time.perf_counter()
        results = grade_batch(
            client,
            args.template,
            candidates,
            spec,
            seeds=seeds,
            timeout_seconds=2,
            on_infra_error="raise",
        )
        elapsed = time.perf_counter() - start
    _print_results(labels, results, elapsed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
