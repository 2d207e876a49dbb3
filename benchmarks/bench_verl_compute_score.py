"""verl's per-sample ``compute_score`` calls: packed by core, against one
exec per call, side by side in one run.

Not a test: run it by hand, ``hatch run bench:one benchmarks/bench_verl_compute_score.py``.

verl's reward loop calls a blocking ``compute_score`` once per response
from a thread pool. ``collimate_rl.verl.compute_score`` shares one client
per process, so core coalesces those calls into packs. The other side is
what an adapter without that gets: the same grade (same code, same spec,
same seed, same client) sent in an exec of its own per call
(``grade(..., coalesce=False)``). Both run on one local backend (its own
process, ``python -m collimate_rl.local_backend``), rounds interleaved; every
score is checked.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import statistics
import sys
import time
from typing import Any

from _results import add_out_option, write_results
from _sides import backend

from collimate_rl import connect, extract_code, grade, reward_spec_from_ground_truth
from collimate_rl.seeds import seed_from_key
from collimate_rl.verl import compute_score

#: A verl code row (APPS-style, stored as a JSON string) and a right response.
GROUND_TRUTH = json.dumps(
    {
        "inputs": [f"{i} {i + 1}\n" for i in range(8)],
        "outputs": [f"{2 * i + 1}\n" for i in range(8)],
    }
)
RESPONSE = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"


def packed(url: str, threads: int, calls: int) -> float:
    def one(_: int) -> float:
        return float(compute_score("apps", RESPONSE, GROUND_TRUTH, None, base_url=url)["score"])

    return _timed(threads, calls, one)


def alone(url: str, threads: int, calls: int) -> float:
    client = connect(url)
    spec = reward_spec_from_ground_truth(GROUND_TRUTH)
    code = extract_code(RESPONSE)
    seed = seed_from_key(json.dumps(["apps", GROUND_TRUTH], sort_keys=True))

    def one(_: int) -> float:
        return grade(client, "dkr-python311", code, spec, seed=seed, coalesce=False).reward

    try:
        return _timed(threads, calls, one)
    finally:
        client.close()


def _timed(threads: int, calls: int, one: Any) -> float:
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        started = time.perf_counter()
        scores = list(pool.map(one, range(calls)))
        wall = time.perf_counter() - started
    if scores != [1.0] * calls:
        raise SystemExit(f"wrong scores: {sorted(set(scores))}")
    return calls / wall


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=32)
    ap.add_argument("--calls", type=int, default=256, help="per round")
    ap.add_argument("--rounds", type=int, default=3)
    add_out_option(ap)
    args = ap.parse_args(argv)
    cmd = [sys.executable, "-m", "collimate_rl.local_backend"]
    ours: list[float] = []
    naive: list[float] = []
    with backend(cmd) as url:
        packed(url, args.threads, args.threads)  # warm-up, both sides
        alone(url, args.threads, args.threads)
        for _ in range(args.rounds):
            ours.append(packed(url, args.threads, args.calls))
            naive.append(alone(url, args.threads, args.calls))
    mo, mn = statistics.median(ours), statistics.median(naive)
    print(
        f"verl compute_score, {args.threads} threads, {args.calls} calls x {args.rounds} rounds "
        "(8 stdin tests a response; median round; min-max)"
    )
    print(f"{'side':<40} {'grades/s':>9} {'min-max':>13}")
    print(f"{'collimate_rl.verl.compute_score (packed)':<40} {mo:>9.1f} "
          f"{f'{min(ours):.1f}-{max(ours):.1f}':>13}")  # fmt: skip
    print(f"{'one exec per call (coalesce=False)':<40} {mn:>9.1f} "
          f"{f'{min(naive):.1f}-{max(naive):.1f}':>13}")  # fmt: skip
    print(f"ratio (packed / one exec per call): {mo / mn:.1f}x")
    sides = {
        "compute_score (coalesced into packs)": ours,
        "one exec per call (coalesce=False)": naive,
    }
    write_results(
        __file__,
        args,
        {"grades_per_s": sides},
        [
            {
                "name": "threads",
                "kind": "bar",
                "title": (
                    f"verl compute_score from {args.threads} threads "
                    f"({args.calls} calls, median of {args.rounds} rounds)"
                ),
                "categories": ["grades/s"],
                "series": [
                    {"name": side, "values": [statistics.median(r)]} for side, r in sides.items()
                ],
                "y_label": "grades per second, higher is better",
            }
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
