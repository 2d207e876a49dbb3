"""What one more exec costs a grading call, and why threads pay for it (not a test).

The same 256-candidate ``PropertyReward(k=16)`` group as
``bench_grade_throughput.py``, graded four ways on one local backend (a
process of its own on loopback), the ways interleaved in every round:

* ``batch``: the documented ``grade_batch(..., concurrency=16)``;
* ``threads 16`` / ``threads 32`` / ``threads 64``: 256 ``grade`` calls
  from that many threads (the callers a coalesced pack can gather are the
  threads waiting at that moment, so fewer threads make more, smaller
  packs).

For each way: wall time a call, the machine's busy CPU a call (``/proc/stat``:
client, server and guest, everything), and the execs a call took (the
server's ``/v1/stats`` ``execs_run``). The least-squares line through
(execs, CPU) over every call of every way splits a call's CPU into what its
candidates cost and what each exec adds: a pack's fixed cost, all in.
From that line it prints the fixed cost an exec would have to come down
to for each threads way to stay within ``--target`` (1.3x) of the batch's
CPU.

    python benchmarks/bench_exec_count.py [--rounds 4] [--calls 3] [--target 1.3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import httpx
from _results import add_out_option, write_results
from _sides import machine_busy_seconds, ours_backend
from bench_grade_throughput import GENERATOR, REFERENCE, SEED, VARIANTS, singles_threads

from collimate_rl import CollimateClient, PropertyReward, grade_batch

THREADS = (16, 32, 64)
N = 256


def execs_run(url: str) -> int:
    return int(httpx.get(url + "/v1/stats", timeout=30).json()["execs_run"])


def measure(url: str, calls: int, call: Callable[[], object]) -> tuple[float, float, float]:
    """Wall ms, busy CPU ms and execs, each a call, the mean of ``calls``."""
    execs0, busy0, t0 = execs_run(url), machine_busy_seconds(), time.perf_counter()
    for _ in range(calls):
        call()
    wall = (time.perf_counter() - t0) / calls * 1000
    busy = (machine_busy_seconds() - busy0) / calls * 1000
    return wall, busy, (execs_run(url) - execs0) / calls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--calls", type=int, default=3, help="calls of each way a round")
    ap.add_argument("--target", type=float, default=1.3, help="threads' CPU / the batch's")
    add_out_option(ap)
    args = ap.parse_args()
    spec = PropertyReward(reference=REFERENCE, generator=GENERATOR, k=16)
    cands = [VARIANTS[i % len(VARIANTS)] for i in range(N)]
    seen: dict[str, list[tuple[float, float, float]]] = {}
    with ours_backend() as url, CollimateClient(url) as client:
        ways: dict[str, Callable[[], object]] = {
            "batch": lambda: grade_batch(
                client, "py", cands, spec, seeds=[SEED] * N, concurrency=16
            )
        }
        for t in THREADS:
            ways[f"threads {t}"] = lambda t=t: singles_threads(client, cands, spec, t)
        for call in ways.values():  # warm: twins wanted, clones made, each way once
            call()
        for r in range(args.rounds):
            for name, call in ways.items():
                wall, busy, execs = measure(url, args.calls, call)
                seen.setdefault(name, []).append((wall, busy, execs))
                print(
                    f"round {r + 1}: {name:10} wall {wall:6.1f} ms  busy CPU {busy:6.1f} ms  "
                    f"execs {execs:5.1f}",
                    flush=True,
                )
    slope, intercept = statistics.linear_regression(
        [e for rounds in seen.values() for _, _, e in rounds],
        [b for rounds in seen.values() for _, b, _ in rounds],
    )
    batch_cpu = statistics.median(b for _, b, _ in seen["batch"])
    batch_wall = statistics.median(w for w, _, _ in seen["batch"])
    batch_execs = statistics.median(e for _, _, e in seen["batch"])
    print("medians of the rounds:")
    figures: dict[str, object] = {}
    for name, rounds in seen.items():
        wall = statistics.median(w for w, _, _ in rounds)
        busy = statistics.median(b for _, b, _ in rounds)
        execs = statistics.median(e for _, _, e in rounds)
        row: dict[str, object] = {
            "wall_ms": round(wall, 1),
            "busy_cpu_ms": round(busy, 1),
            "execs": round(execs, 1),
            "wall_over_batch": round(wall / batch_wall, 3),
            "cpu_over_batch": round(busy / batch_cpu, 3),
        }
        line = (
            f"  {name:10} wall {wall:6.1f} ms ({wall / batch_wall:.2f}x)  "
            f"busy CPU {busy:6.1f} ms ({busy / batch_cpu:.2f}x)  execs {execs:5.1f}"
        )
        if name != "batch" and execs > batch_execs:
            # intercept + execs * F <= target * (intercept + batch_execs * F)
            room = (args.target - 1) * intercept / (execs - args.target * batch_execs)
            row["exec_cost_for_target_ms"] = round(room, 2)
            line += f"  (within {args.target}x of the batch's CPU: an exec at most {room:.1f} ms)"
        figures[name] = row
        print(line)
    figures["candidates_cpu_ms"] = round(intercept, 1)
    figures["exec_cpu_ms"] = round(slope, 2)
    print(f"a call's busy CPU = {intercept:.0f} ms + {slope:.1f} ms an exec (the line through all)")
    write_results(__file__, args, figures, [])


if __name__ == "__main__":
    main()
