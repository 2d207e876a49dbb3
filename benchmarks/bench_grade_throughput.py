"""GRPO-group grading throughput, side by side with collimate-rl 0.5.0 (not a test).

Why: grading a GRPO group is the call a trainer makes every step. One group
is 256 candidates graded with ``PropertyReward(k=16)`` under one CRN seed;
each side runs its own local backend as a separate process on loopback,
rounds interleaved (ours, theirs, ours, ...) so both see the same machine
noise. Every round grades the group five ways:

* ``documented``: the call the README documents, ``grade_batch(client,
  "py", candidates, spec, seeds=..., concurrency=16)``, no ``pack``
  argument (packing is automatic); the judged figure;
* ``documented async``: the same with ``grade_batch_async``;
* ``singles async``: 256 concurrent ``grade_async`` calls on one event loop
  (how a framework calls a reward: one sample at a time);
* ``singles threads``: 256 ``grade`` calls from 32 threads;
* ``0.5.0``: collimate-rl 0.5.0's ``grade_batch`` on its own backend, from
  its own venv (its default concurrency of 24, or the highest its backend
  survives).

Each of our ways runs ``--calls`` times a round, each batch followed by its
singles, and the round's figure is their mean: one call is short beside the
machine's swings in speed. Every way must give 0.5.0's rewards (checked).
Targets: the documented call at least 12x 0.5.0; each singles way within
1.3x of its batch's time. ``--pack-sizes 8,32,...`` also times the
documented call with each ``pack=N``.

    python benchmarks/bench_grade_throughput.py [--n 256] [--k 16] [--rounds 5]
        [--concurrency 16] [--calls 3] [--threads 32] [--peer-concurrency 24]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from _results import add_out_option, write_results
from _sides import ours_backend, peer_backend, peer_env, peer_python

from collimate_rl import (
    AsyncCollimateClient,
    CollimateClient,
    GradeResult,
    PropertyReward,
    grade,
    grade_async,
    grade_batch,
    grade_batch_async,
)

SEED = "ab" * 32
REFERENCE = "    return sum(c in 'aeiouAEIOU' for c in x)"
GENERATOR = "''.join(random.choice('abcdEIOUxyz') for _ in range(8))"
VARIANTS = [
    "def solve(x):\n    return sum(c in 'aeiouAEIOU' for c in x)\n",  # right
    "def solve(x):\n    return sum(c in 'aeiou' for c in x)\n",  # half right
    "def solve(x):\n    return len(x) // 3\n",  # mostly wrong
    "def solve(x):\n    return sum(1 for c in x if c.lower() in 'aeiou')\n",  # right, differently
]

PEER_CLIENT = textwrap.dedent(
    """
    import json, sys, time
    from collimate_rl import CollimateClient, PropertyReward, grade_batch
    url, n, k, seed, variants, template, conc = sys.argv[1], int(sys.argv[2]), \\
        int(sys.argv[3]), sys.argv[4], json.loads(sys.argv[5]), sys.argv[6], int(sys.argv[7])
    client = CollimateClient(url)
    spec = PropertyReward(reference=%r, generator=%r, k=k)
    cands = [variants[i %% len(variants)] for i in range(n)]
    grade_batch(client, template, cands[:16], spec, seeds=[seed] * 16)  # warm-up
    t0 = time.perf_counter()
    res = grade_batch(client, template, cands, spec, seeds=[seed] * n, concurrency=conc)
    dt = time.perf_counter() - t0
    print(json.dumps({"seconds": dt, "rewards": [r.reward for r in res]}))
    """
) % (REFERENCE, GENERATOR)

Timed = tuple[float, list[GradeResult]]

#: Each round's first documented call, timed alone (printed for comparison).
ONE_CALL: list[float] = []


def timed(run: Callable[[], list[GradeResult]]) -> Timed:
    t0 = time.perf_counter()
    results = run()
    return time.perf_counter() - t0, results


def singles_threads(
    client: CollimateClient, cands: list[str], spec: PropertyReward, threads: int
) -> Timed:
    """``threads`` threads, started and waiting before the clock starts, each
    grading its share of ``cands`` one ``grade`` call after another."""
    results: list[GradeResult | None] = [None] * len(cands)
    errors: list[BaseException] = []

    def worker(mine: range) -> None:
        go.wait()
        try:
            for i in mine:
                results[i] = grade(client, "py", cands[i], spec, seed=SEED)
        except BaseException as exc:  # reported after the clock stops
            errors.append(exc)

    share = -(-len(cands) // threads)
    pool = [
        threading.Thread(target=worker, args=(range(at, min(at + share, len(cands))),))
        for at in range(0, len(cands), share)
    ]
    go = threading.Barrier(len(pool) + 1)
    for t in pool:
        t.start()
    go.wait()
    t0 = time.perf_counter()
    for t in pool:
        t.join()
    dt = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return dt, [r for r in results if r is not None]


def mean_of(runs: list[Timed], way: str) -> Timed:
    """The mean time of ``runs``, and their results (checked alike)."""
    rewards = [[r.reward for r in res] for _, res in runs]
    if any(rw != rewards[0] for rw in rewards):
        raise RuntimeError(f"{way}: runs of the same round gave different rewards")
    return statistics.fmean(dt for dt, _ in runs), runs[-1][1]


def ours_sync(
    url: str, cands: list[str], spec: PropertyReward, args: argparse.Namespace
) -> dict[str, Timed]:
    """``--calls`` documented calls, each followed by a singles-from-threads
    run: both ways see the same stretch of the machine."""
    batches: list[Timed] = []
    singles: list[Timed] = []
    with CollimateClient(url) as client:
        grade_batch(client, "py", cands[:16], spec, seeds=[SEED] * 16)  # warm-up
        for _ in range(args.calls):
            batches.append(
                timed(
                    lambda: grade_batch(
                        client, "py", cands, spec, seeds=[SEED] * len(cands),
                        concurrency=args.concurrency,
                    )
                )
            )  # fmt: skip
            singles.append(singles_threads(client, cands, spec, args.threads))
    ONE_CALL.append(batches[0][0])
    return {
        "documented": mean_of(batches, "documented"),
        "singles threads": mean_of(singles, "singles threads"),
    }


def pack_sweep(
    url: str,
    cands: list[str],
    spec: PropertyReward,
    args: argparse.Namespace,
    expected: list[float],
) -> dict[int, list[float]]:
    """``--pack-sizes``: the documented call with ``pack=N`` for each N,
    sizes interleaved within each round, ``--calls`` calls a round (their
    mean time is the round's); grades/s per size, round by round. Rewards
    must equal the documented call's."""
    rates: dict[int, list[float]] = {size: [] for size in args.pack_sizes}
    with CollimateClient(url) as client:
        grade_batch(client, "py", cands[:16], spec, seeds=[SEED] * 16)  # warm-up
        for _ in range(args.rounds):
            for size in args.pack_sizes:
                runs = [
                    timed(
                        lambda size=size: grade_batch(
                            client, "py", cands, spec, seeds=[SEED] * len(cands),
                            concurrency=args.concurrency, pack=size,
                        )
                    )
                    for _ in range(args.calls)
                ]  # fmt: skip
                dt, results = mean_of(runs, f"pack={size}")
                if [r.reward for r in results] != expected:
                    raise RuntimeError(f"pack={size}: rewards differ from the documented call's")
                rates[size].append(len(cands) / dt)
            print(
                "pack sizes: " + "  ".join(f"{k} {v[-1]:6.1f}/s" for k, v in rates.items()),
                flush=True,
            )
    return rates


def ours_async(
    url: str, cands: list[str], spec: PropertyReward, args: argparse.Namespace
) -> dict[str, Timed]:
    """As :func:`ours_sync`, on one event loop: the batch, then 256
    concurrent single grades, ``--calls`` times."""

    async def run() -> dict[str, Timed]:
        batches: list[Timed] = []
        singles: list[Timed] = []
        async with AsyncCollimateClient(url) as client:
            await grade_batch_async(client, "py", cands[:16], spec, seeds=[SEED] * 16)
            for _ in range(args.calls):
                t0 = time.perf_counter()
                batch = await grade_batch_async(
                    client, "py", cands, spec, seeds=[SEED] * len(cands),
                    concurrency=args.concurrency,
                )  # fmt: skip
                t1 = time.perf_counter()
                alone = await asyncio.gather(
                    *(grade_async(client, "py", c, spec, seed=SEED) for c in cands)
                )
                t2 = time.perf_counter()
                batches.append((t1 - t0, batch))
                singles.append((t2 - t1, list(alone)))
        return {
            "documented async": mean_of(batches, "documented async"),
            "singles async": mean_of(singles, "singles async"),
        }

    return asyncio.run(run())


def theirs(python: Path, url: str, n: int, k: int, concurrency: int) -> tuple[float, list[float]]:
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            [str(python), "-c", PEER_CLIENT, url, str(n), str(k), SEED, json.dumps(VARIANTS), "py",
             str(concurrency)],
            capture_output=True, text=True, check=False, cwd=tmp, timeout=1800, env=peer_env(),
        )  # fmt: skip
    if out.returncode != 0:
        raise RuntimeError(f"the 0.5.0 client failed:\n{out.stderr[-3000:]}")
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return float(data["seconds"]), [float(r) for r in data["rewards"]]


def theirs_best_effort(
    python: Path, url: str, args: argparse.Namespace
) -> tuple[float, list[float], int]:
    """0.5.0's backend is a stdlib ThreadingHTTPServer (listen backlog 5): at
    its default ``concurrency=24`` it may reset connections and the group
    fails. Each round uses the highest concurrency it survives, trying
    ``--peer-concurrency`` first."""
    last: Exception | None = None
    for conc in dict.fromkeys([args.peer_concurrency, 24, 12, 8, 4, 2, 1]):
        try:
            dt, rewards = theirs(python, url, args.n, args.k, conc)
        except RuntimeError as exc:
            last = exc
            continue
        return dt, rewards, conc
    raise RuntimeError(f"0.5.0 failed at every concurrency: {last}")


def twins_anonymous_mb() -> list[float]:
    """The anonymous memory of each live clean twin of our backend (the
    process every packed candidate is forked from): each fork copies, and
    each candidate's exit tears down, the page-table entries of this much."""
    sizes = []
    for proc in Path("/proc").iterdir():
        try:
            if (proc / "comm").read_text().strip() != "collimate-twin":
                continue
            for line in (proc / "smaps_rollup").read_text().splitlines():
                if line.startswith("Anonymous:"):
                    sizes.append(int(line.split()[1]) / 1024)
        except OSError:
            continue
    return sorted(sizes)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--concurrency", type=int, default=16, help="ours, the documented call")
    ap.add_argument(
        "--calls", type=int, default=3,
        help="ours: runs of each way per round (their mean time is the round's)",
    )  # fmt: skip
    ap.add_argument("--threads", type=int, default=32, help="ours, singles from threads")
    ap.add_argument("--peer-concurrency", type=int, default=24)
    ap.add_argument(
        "--pack-sizes",
        type=lambda text: [int(x) for x in text.split(",") if x.strip()],
        default=[],
        metavar="N[,N...]",
        help="also time the documented call with pack=N for each N (default: off)",
    )
    add_out_option(ap)
    args, _ = ap.parse_known_args(argv)

    spec = PropertyReward(reference=REFERENCE, generator=GENERATOR, k=args.k)
    cands = [VARIANTS[i % len(VARIANTS)] for i in range(args.n)]
    python = peer_python()
    names = ["documented", "documented async", "singles async", "singles threads", "0.5.0"]
    seconds: dict[str, list[float]] = {name: [] for name in names}
    packed: dict[str, int] = {}
    rewards: dict[str, list[float]] = {}
    peer_conc: list[int] = []
    print(f"{args.n} candidates, PropertyReward(k={args.k}), CRN seed, {os.cpu_count()} CPUs")
    with ours_backend() as ours_url, peer_backend(python) as peer_url:
        health = httpx.get(ours_url + "/v1/health").json()
        print(f"ours: {health.get('isolation_detail', '?')}, run_slots {health.get('run_slots')}")
        for rnd in range(1, args.rounds + 1):
            got = {
                **ours_sync(ours_url, cands, spec, args),
                **ours_async(ours_url, cands, spec, args),
            }
            for name, (dt, results) in got.items():
                seconds[name].append(dt)
                rewards[name] = [r.reward for r in results]
                packed[name] = sum("pack" in r.raw for r in results)
            dt_p, rw_p, conc = theirs_best_effort(python, peer_url, args)
            peer_conc.append(conc)
            seconds["0.5.0"].append(dt_p)
            rewards["0.5.0"] = rw_p
            line = "  ".join(f"{name} {args.n / s[-1]:6.1f}/s" for name, s in seconds.items())
            print(f"round {rnd}: {line}", flush=True)
        pack_rates = (
            pack_sweep(ours_url, cands, spec, args, rewards["documented"])
            if args.pack_sizes
            else {}
        )
        twins = twins_anonymous_mb()
        if twins:
            print(f"ours: a clean twin holds {statistics.median(twins):.1f} MB of anonymous memory")
    agree = {name: rw == rewards["0.5.0"] for name, rw in rewards.items()}
    med = {name: statistics.median(s) for name, s in seconds.items()}
    print("median grades/s: " + ", ".join(f"{k} {args.n / v:.1f}" for k, v in med.items()))
    print(
        f"documented, one call alone (each round's first of {args.calls}): median "
        f"{args.n / statistics.median(ONE_CALL):.1f}/s, "
        f"{statistics.median(seconds['0.5.0']) / statistics.median(ONE_CALL):.1f}x 0.5.0's median"
    )
    print("graded in packs: " + ", ".join(f"{k} {v}/{args.n}" for k, v in packed.items()))
    print(f"0.5.0's concurrency per round (the highest it survived): {peer_conc}")
    print(f"rewards identical to 0.5.0's (same seed, same candidates): {agree}")
    for name in names[:-1]:
        per_round = [p / o for o, p in zip(seconds[name], seconds["0.5.0"], strict=True)]
        print(
            f"ratio {name} / 0.5.0: {med['0.5.0'] / med[name]:.1f}x of the medians, "
            f"{statistics.median(per_round):.1f}x the median round "
            f"(rounds: {', '.join(f'{r:.1f}' for r in per_round)})"
        )
    pairs = [("singles async", "documented async"), ("singles threads", "documented")]
    for single, batch in pairs:
        per_round = [s / b for s, b in zip(seconds[single], seconds[batch], strict=True)]
        print(
            f"time {single} / {batch} (same round): median {statistics.median(per_round):.2f}x "
            f"(rounds: {', '.join(f'{r:.2f}' for r in per_round)})"
        )
    _write(args, seconds, agree, peer_conc, pack_rates)
    return 0 if all(agree.values()) else 1


#: The ways as the charts name them (0.5.0 by its package's name).
LABELS = {
    "documented": "grade_batch (documented)",
    "documented async": "grade_batch_async",
    "singles async": "concurrent grade_async",
    "singles threads": "grade from threads",
    "0.5.0": "collimate-rl 0.5.0 grade_batch",
}


def _median_rate(rates: list[float]) -> float:
    """The rate of the median time (as the printout's medians are taken):
    with an even count of rounds, the median of the rates would differ."""
    return 1 / statistics.median([1 / r for r in rates])


def _write(
    args: argparse.Namespace,
    seconds: dict[str, list[float]],
    agree: dict[str, bool],
    peer_conc: list[int],
    pack_rates: dict[int, list[float]],
) -> None:
    """The results JSON and its charts: median grades/s per way, each
    way's grades/s round by round (the spread the median hides), and with
    --pack-sizes the documented call's grades/s against its pack size."""
    rates = {name: [args.n / s for s in times] for name, times in seconds.items()}
    figures = {
        "candidates": args.n,
        "k": args.k,
        "grades_per_s": {LABELS[name]: r for name, r in rates.items()},
        "median_grades_per_s": {LABELS[name]: _median_rate(r) for name, r in rates.items()},
        "rewards_agree_with_0_5_0": {LABELS[name]: ok for name, ok in agree.items()},
        "peer_concurrency_per_round": peer_conc,
        "pack_sizes_grades_per_s": {str(k): v for k, v in pack_rates.items()},
    }
    what = f"{args.n} candidates, PropertyReward(k={args.k})"
    rounds = f"median of {args.rounds} rounds, {args.calls} calls a round for ours"
    charts: list[dict[str, object]] = [
        {
            "name": "ways",
            "kind": "bar",
            "title": f"One GRPO group graded ({what})",
            "categories": [f"grades/s ({rounds})"],
            "series": [
                {"name": LABELS[name], "values": [_median_rate(r)]} for name, r in rates.items()
            ],
            "y_label": "grades per second, higher is better",
        },
        {
            "name": "rounds",
            "kind": "line",
            "title": f"Each round's grades/s ({what})",
            "x_values": list(range(1, args.rounds + 1)),
            "series": [{"name": LABELS[name], "values": r} for name, r in rates.items()],
            "y_label": "grades per second",
            "x_label": "round (ours and 0.5.0 interleaved)",
        },
    ]
    if pack_rates:
        sizes = sorted(pack_rates)
        auto = _median_rate(rates["documented"])
        charts.append(
            {
                "name": "pack-sizes",
                "kind": "line",
                "title": f"grade_batch against its pack size ({what})",
                "x_values": sizes,
                "log_x": True,
                "series": [
                    {
                        "name": f"pack=N (median of {args.rounds} rounds)",
                        "values": [_median_rate(pack_rates[k]) for k in sizes],
                    },
                    {
                        "name": "collimate-rl 0.5.0 grade_batch, no packs (its median)",
                        "values": [_median_rate(rates["0.5.0"])] * len(sizes),
                    },
                ],
                "y_label": "grades per second, higher is better",
                "x_label": f'candidates per pack (pack="auto", the default: {auto:.0f}/s)',
            }
        )
    write_results(__file__, args, figures, charts)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
