"""skyrl-gym's ``python`` tool, ours against skyrl-gym's own (not a test):
64 trajectories x 10 tool calls at once, latency per call, p50 and p99.

Why: a multi-turn trainer calls the tool in every turn of every trajectory.
Ours: ``collimate_rl.skyrl.tools.CollimatePythonToolGroup``, one per
trajectory, as a ``collimate_code`` env with ``tools: ["python"]`` holds it:
the trajectory's calls are cells of one sandboxed interpreter, started at
its first call. Theirs: skyrl-gym's ``PythonCodeExecutorToolGroup``, a fresh
``python -c`` on the host per call, unisolated. Both are called as
skyrl-gym's envs call a tool, ``ToolGroup.execute_tool("python", code)``,
from 64 threads started together (one trajectory each), the sides taking
turns. Two workloads:

* ``self-contained``: snippets both tools can run; their outputs must agree.
  Each trajectory's first call, which starts our sandbox, is also reported
  apart.
* ``stateful`` (``--stateful``): call 1 builds a data set, calls 2-10 query
  it; ours keeps it, theirs sends the setup again with every query.

A call skyrl-gym's tool fails (its own timeout) is counted, not compared;
any output of ours that differs from one of theirs that ran is a defect
(exit 1).

    python benchmarks/bench_python_tool.py [--trajectories 64] [--calls 10] [--stateful]
    hatch run bench:one benchmarks/bench_python_tool.py
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from _results import add_out_option, write_results
from _sides import ours_backend

from collimate_rl import CollimateClient

OURS = "ours: sandbox kernel per trajectory"
THEIRS = "skyrl-gym: python -c per call"

#: Self-contained calls (``{t}``: the trajectory's number, so no two are alike).
SELF_CONTAINED: Sequence[str] = (
    "print(sum(range(1000 + {t})))",
    "import math\nprint(math.factorial(20 + {t} % 5))",
    "import json\nprint(json.dumps({{'t': {t}, 'xs': [1, 2, 3]}}, sort_keys=True))",
    "print(''.join(sorted('trajectory{t}')))",
    "print(len([p for p in range(2, 3000) if all(p % d for d in range(2, int(p ** 0.5) + 1))]))",
    "import re\nprint(re.findall(r'\\d+', 'a1b22c333d{t}'))",
    "from fractions import Fraction\nprint(sum(Fraction(1, n) for n in range(1, 12 + {t} % 4)))",
    "import hashlib\nprint(hashlib.sha256(b'collimate-{t}').hexdigest()[:16])",
    "import itertools\nprint(len(list(itertools.permutations(range(6)))) + {t})",
    "import statistics\nprint(statistics.median([5, 1, 4, 2, 3, {t}]))",
)

#: The stateful workload's first call, and what later calls ask of its data.
SETUP = (
    "import random, statistics\n"
    "rng = random.Random({t})\n"
    "data = [rng.gauss(0, 1) for _ in range(50_000)]\n"
    "data.sort()"
)
QUERIES: Sequence[str] = (
    "print(round(statistics.fmean(data), 6))",
    "print(round(data[len(data) // 2], 6))",
    "print(sum(1 for x in data if x > 1))",
    "print(round(max(data) - min(data), 6))",
    "print(round(statistics.pstdev(data[:20_000]), 6))",
    "print(sum(1 for x in data if abs(x) < 0.1))",
    "print(round(data[len(data) // 10], 6))",
    "print(round(sum(x * x for x in data) / len(data), 6))",
    "print(len(data))",
)


def self_contained_calls(t: int, calls: int) -> list[tuple[str, str]]:
    """``(our code, their code)`` of trajectory ``t``: the same snippet."""
    out = []
    for k in range(calls):
        code = SELF_CONTAINED[k % len(SELF_CONTAINED)].format(t=t)
        out.append((code, code))
    return out


def stateful_calls(t: int, calls: int) -> list[tuple[str, str]]:
    """Ours: the setup, then queries; theirs: the setup again with each query."""
    setup = SETUP.format(t=t)
    out = [(setup + "\nprint(len(data))", setup + "\nprint(len(data))")]
    for k in range(calls - 1):
        query = QUERIES[k % len(QUERIES)]
        out.append((query, setup + "\n" + query))
    return out


def nearest_rank(values: Sequence[float], pct: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = -int(-pct * len(ordered) // 100)
    return ordered[min(max(rank, 1), len(ordered)) - 1]


def run_side(
    make_group: Callable[[], Any],
    workload: list[list[tuple[str, str]]],
    pick: int,
) -> tuple[list[list[float]], list[list[str]], float]:
    """Every trajectory in a thread of its own, started together: the
    latency (ms) and output of each call, and the wall time of them all."""
    n = len(workload)
    groups = [make_group() for _ in range(n)]
    latencies: list[list[float]] = [[] for _ in range(n)]
    outputs: list[list[str]] = [[] for _ in range(n)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(n + 1)

    def trajectory(i: int) -> None:
        barrier.wait()
        try:
            for pair in workload[i]:
                t0 = time.perf_counter()
                text = groups[i].execute_tool("python", pair[pick])
                latencies[i].append((time.perf_counter() - t0) * 1000.0)
                outputs[i].append(str(text).strip())
        except BaseException as exc:  # reported after the join
            errors.append(exc)

    threads = [threading.Thread(target=trajectory, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    for group in groups:
        close = getattr(group, "close", None)
        if close is not None:
            close()
    if errors:
        raise errors[0]
    return latencies, outputs, wall


#: How skyrl-gym's tool reports a failed call (stderr, or its own timeout).
THEIR_ERROR = "Error executing Python code:"


def compare(ours: list[list[str]], theirs: list[list[str]]) -> dict[str, int]:
    """Outputs that agree; skyrl-gym's failed calls (its 10 s timeout, under
    load); ours that differ from a skyrl-gym output that ran (a defect)."""
    counts = {"agree": 0, "theirs_failed": 0, "ours_wrong": 0}
    for t, (mine, their) in enumerate(zip(ours, theirs, strict=True)):
        for k, (a, b) in enumerate(zip(mine, their, strict=True)):
            if a == b:
                counts["agree"] += 1
            elif b.startswith(THEIR_ERROR):
                counts["theirs_failed"] += 1
            else:
                counts["ours_wrong"] += 1
                print(f"  trajectory {t} call {k + 1}: ours {a!r:.200}, skyrl-gym {b!r:.200}")
    return counts


def summary(latencies: list[list[float]]) -> dict[str, float]:
    every = [ms for calls in latencies for ms in calls]
    first = [calls[0] for calls in latencies if calls]
    later = [ms for calls in latencies for ms in calls[1:]]
    return {
        "p50_ms": nearest_rank(every, 50),
        "p99_ms": nearest_rank(every, 99),
        "first_call_p50_ms": nearest_rank(first, 50),
        "first_call_p99_ms": nearest_rank(first, 99),
        "later_calls_p50_ms": nearest_rank(later, 50),
        "later_calls_p99_ms": nearest_rank(later, 99),
    }


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--trajectories", type=int, default=64)
    ap.add_argument("--calls", type=int, default=10, help="tool calls per trajectory")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--stateful", action="store_true", help="also the stateful workload")
    add_out_option(ap)
    args, _ = ap.parse_known_args(argv)
    try:
        from skyrl_gym.tools import PythonCodeExecutorToolGroup

        from collimate_rl.skyrl.tools import CollimatePythonToolGroup
    except ImportError:
        print("skyrl-gym is not installed here: use hatch run bench:one ...")
        return 2

    workloads = {"self-contained": self_contained_calls}
    if args.stateful:
        workloads["stateful"] = stateful_calls
    n, calls = args.trajectories, args.calls
    print(f"{n} trajectories x {calls} tool calls at once, from {n} threads, per workload")
    figures: dict[str, Any] = {"trajectories": n, "calls": calls, "workloads": {}}
    correct = True
    with ours_backend() as url, CollimateClient(url) as client:

        def ours() -> Any:
            return CollimatePythonToolGroup(client=client, template="py")

        sides: dict[str, Callable[[], Any]] = {OURS: ours, THEIRS: PythonCodeExecutorToolGroup}
        warm = [self_contained_calls(t, 2) for t in range(4)]
        for make_group in sides.values():  # warm-up: imports, the backend's first clone
            run_side(make_group, warm, 0)
        for name, build in workloads.items():
            workload = [build(t, calls) for t in range(n)]
            lat: dict[str, list[list[float]]] = {s: [] for s in sides}
            counts = {"agree": 0, "theirs_failed": 0, "ours_wrong": 0}
            walls: dict[str, list[float]] = {s: [] for s in sides}
            for rnd in range(1, args.rounds + 1):
                outs = {}
                for pick, (side, make_group) in enumerate(sides.items()):
                    latencies, outs[side], wall = run_side(make_group, workload, pick)
                    lat[side].extend(latencies)
                    walls[side].append(wall)
                check = compare(outs[OURS], outs[THEIRS])
                for key, value in check.items():
                    counts[key] += value
                print(
                    f"{name} round {rnd}: "
                    + "  ".join(f"{s.split(':')[0]} {walls[s][-1]:.1f} s" for s in sides)
                    + f"  outputs agree: {check['agree']}/{n * calls}"
                    + f" (skyrl-gym failed {check['theirs_failed']},"
                    + f" ours wrong {check['ours_wrong']})",
                    flush=True,
                )
            stats = {s: summary(lat[s]) for s in sides}
            figures["workloads"][name] = {
                **{s: {**stats[s], "wall_s": walls[s]} for s in sides},
                "outputs": counts,
            }
            correct = correct and counts["ours_wrong"] == 0
            print(f"\n{name}: ms per call ({n * calls * args.rounds} calls a side)")
            print(
                f"{'side':<40} {'p50':>8} {'p99':>8} {'1st p50':>8} {'1st p99':>8} "
                f"{'rest p50':>9} {'rest p99':>9}"
            )
            for s in sides:
                v = stats[s]
                print(
                    f"{s:<40} {v['p50_ms']:>8.1f} {v['p99_ms']:>8.1f} "
                    f"{v['first_call_p50_ms']:>8.1f} {v['first_call_p99_ms']:>8.1f} "
                    f"{v['later_calls_p50_ms']:>9.1f} {v['later_calls_p99_ms']:>9.1f}"
                )
            ratio = stats[THEIRS]["p50_ms"] / stats[OURS]["p50_ms"]
            print(f"theirs / ours, p50: {ratio:.1f}x\n")
    print(f"every output of ours equals skyrl-gym's where skyrl-gym's ran: {correct}")
    write_results(
        __file__,
        args,
        figures,
        [
            {
                "name": name.replace("-", "_"),
                "kind": "bar",
                "title": f"{name} tool calls, {n} trajectories x {calls} at once",
                "categories": ["p50", "p99"],
                "series": [
                    {"name": s, "values": [v["p50_ms"], v["p99_ms"]]}
                    for s, v in figures["workloads"][name].items()
                    if s in (OURS, THEIRS)
                ],
                "y_label": "ms per call, lower is better",
            }
            for name in workloads
        ],
    )
    return 0 if correct else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
