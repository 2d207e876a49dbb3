"""The latency of one lone ``grade()`` call: does coalescing make a grade
that arrives alone wait? (Not a test.)

One candidate graded with ``PropertyReward(k=16)``, one call after another
(nothing else in flight), on our local backend as a process of its own:
``grade()`` as documented (``coalesce=True``: a grade with nothing else of
its target waiting or in flight leaves at once), ``grade(...,
coalesce=False)`` (no coalescer at all), the same two with
``grade_async``, and collimate-rl 0.5.0's ``grade`` on its own backend.
Rounds interleaved; p50 and p90 of each, and the ratio of the documented
call to the one without coalescer (target: 1.0x, no wait).

    python benchmarks/bench_grade_latency.py [--samples 60] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import textwrap
import time

from _results import add_out_option, write_results
from _sides import ours_backend, peer_backend, peer_env, peer_python

from collimate_rl import AsyncCollimateClient, CollimateClient, PropertyReward, grade, grade_async

REFERENCE = "    return sum(c in 'aeiouAEIOU' for c in x)"
GENERATOR = "''.join(random.choice('abcdEIOUxyz') for _ in range(8))"
CANDIDATE = "def solve(x):\n    return sum(c in 'aeiouAEIOU' for c in x)\n"
SEED = "ab" * 32

PEER = textwrap.dedent(
    """
    import json, sys, time
    from collimate_rl import CollimateClient, PropertyReward, grade
    url, n = sys.argv[1], int(sys.argv[2])
    client = CollimateClient(url)
    spec = PropertyReward(reference=%r, generator=%r, k=16)
    for _ in range(3):
        grade(client, "py", %r, spec, seed=%r)
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        grade(client, "py", %r, spec, seed=%r)
        out.append(time.perf_counter() - t0)
    print(json.dumps(out))
    """
) % (REFERENCE, GENERATOR, CANDIDATE, SEED, CANDIDATE, SEED)


def sync_samples(url: str, n: int, coalesce: bool, spec: PropertyReward) -> list[float]:
    with CollimateClient(url) as client:
        for _ in range(3):
            grade(client, "py", CANDIDATE, spec, seed=SEED, coalesce=coalesce)
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            grade(client, "py", CANDIDATE, spec, seed=SEED, coalesce=coalesce)
            out.append(time.perf_counter() - t0)
    return out


def async_samples(url: str, n: int, coalesce: bool, spec: PropertyReward) -> list[float]:
    async def run() -> list[float]:
        async with AsyncCollimateClient(url) as client:
            for _ in range(3):
                await grade_async(client, "py", CANDIDATE, spec, seed=SEED, coalesce=coalesce)
            out = []
            for _ in range(n):
                t0 = time.perf_counter()
                await grade_async(client, "py", CANDIDATE, spec, seed=SEED, coalesce=coalesce)
                out.append(time.perf_counter() - t0)
            return out

    return asyncio.run(run())


def peer_samples(python: str, url: str, n: int) -> list[float]:
    out = subprocess.run(
        [python, "-c", PEER, url, str(n)],
        capture_output=True, text=True, check=True, timeout=600, env=peer_env(),
    )  # fmt: skip
    return [float(x) for x in json.loads(out.stdout.strip().splitlines()[-1])]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=3)
    add_out_option(ap)
    args, _ = ap.parse_known_args(argv)
    spec = PropertyReward(reference=REFERENCE, generator=GENERATOR, k=16)
    python = str(peer_python())
    samples: dict[str, list[float]] = {
        "grade": [],
        "grade coalesce=False": [],
        "grade_async": [],
        "grade_async coalesce=False": [],
        "0.5.0 grade": [],
    }
    with ours_backend() as url, peer_backend(peer_python()) as peer_url:
        for rnd in range(1, args.rounds + 1):
            samples["grade"] += sync_samples(url, args.samples, True, spec)
            samples["grade coalesce=False"] += sync_samples(url, args.samples, False, spec)
            samples["grade_async"] += async_samples(url, args.samples, True, spec)
            samples["grade_async coalesce=False"] += async_samples(url, args.samples, False, spec)
            samples["0.5.0 grade"] += peer_samples(python, peer_url, args.samples)
            print(f"round {rnd} done", flush=True)
    p50 = {k: statistics.median(v) * 1000 for k, v in samples.items()}
    p90 = {k: statistics.quantiles(v, n=10)[-1] * 1000 for k, v in samples.items()}
    for name, values in samples.items():
        print(
            f"{name:28s} p50 {p50[name]:6.2f} ms  p90 {p90[name]:6.2f} ms  ({len(values)} samples)"
        )
    for name in ("grade", "grade_async"):
        ratio = p50[name] / p50[f"{name} coalesce=False"]
        print(f"ratio {name} / {name} coalesce=False (p50): {ratio:.2f}x")
    figures = {"samples_per_way": len(samples["grade"]), "p50_ms": p50, "p90_ms": p90}
    write_results(__file__, args, figures, [])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
