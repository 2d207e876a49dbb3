"""Two checkouts side by side in one run: one-shot latency and the
documented grade_batch call, each side with its own client and its own
local backend, rounds interleaved (not a test; no ``bench_`` prefix: it
needs a second checkout).

    python benchmarks/ab_trees.py --old /path/to/older/checkout [--rounds 3]
    python benchmarks/ab_trees.py --old /path/to/older/checkout --paired 30

Each round runs, for each side in turn, a fresh interpreter whose
``collimate_rl`` is that checkout's (``PYTHONPATH``): it starts that
checkout's backend as a process of its own, warms it up, then measures 60
sequential one-shot execs (``print(1)``; p50) and one documented call,
``grade_batch(client, "py", 256 candidates, PropertyReward(k=16), seeds=...,
concurrency=16)`` (grades/s). The table shows each side's medians and
new / old.

``--paired N`` resolves smaller differences: both sides start once (their
own client process and backend, warmed), then take turns, N pairs (the
order flips every pair), so both see the same seconds of the machine. A
turn is one call (``--call``: the documented one; ``pack128``, one pack
of 128 on one CPU, whose time is its CPU; ``threads``, 256 ``grade``
from 32 threads), then 40 sequential one-shot execs with the
blocking client and 40 with the async one (each a p50). It prints the
median of the per-pair ratios of the call's wall time and of the machine's
busy CPU time (``/proc/stat``) during the turn, and of the two latencies.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from _sides import machine_busy_seconds

HERE = Path(__file__).resolve().parent

MEASURE = r"""
import json, socket, statistics, subprocess, sys, time
import httpx
from collimate_rl import CollimateClient, PropertyReward, grade_batch
with socket.socket() as s:
    s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
url = f"http://127.0.0.1:{port}"
server = subprocess.Popen([sys.executable, "-m", "collimate_rl.local_backend", "--port", str(port)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    for _ in range(600):
        try:
            if httpx.get(url + "/v1/health", timeout=1).status_code == 200: break
        except httpx.HTTPError: pass
        time.sleep(0.1)
    spec = PropertyReward(reference="    return sum(c in 'aeiouAEIOU' for c in x)",
                          generator="''.join(random.choice('abcdEIOUxyz') for _ in range(8))", k=16)
    variants = ["def solve(x):\n    return sum(c in 'aeiouAEIOU' for c in x)\n",
                "def solve(x):\n    return len(x) // 3\n"]
    cands = [variants[i % 2] for i in range(256)]
    with CollimateClient(url) as client:
        for _ in range(10): client.exec_once("py", code="print(1)")
        grade_batch(client, "py", cands[:16], spec, seeds=["ab" * 32] * 16)
        lat = []
        for _ in range(60):
            t0 = time.perf_counter()
            client.exec_once("py", code="print(1)")
            lat.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        res = grade_batch(client, "py", cands, spec, seeds=["ab" * 32] * 256, concurrency=16)
        dt = time.perf_counter() - t0
    print(json.dumps({"p50_ms": 1000 * statistics.median(lat), "grades_s": 256 / dt,
                      "rewards": [r.reward for r in res]}))
finally:
    server.terminate(); server.wait(60)
"""


# MEASURE's server start and spec, then a loop of documented calls on stdin
_SETUP, _MARK, _ = MEASURE.partition("    with CollimateClient(url) as client:")
assert _MARK, "MEASURE no longer opens its client where SERVE expects"
SERVE = (
    _SETUP
    + r"""
    import asyncio
    from collimate_rl import AsyncCollimateClient

    def p50_blocking(client):
        lat = []
        for _ in range(40):
            t0 = time.perf_counter()
            client.exec_once("py", code="print(1)")
            lat.append(time.perf_counter() - t0)
        return statistics.median(lat)

    async def p50_async():
        async with AsyncCollimateClient(url) as aclient:
            for _ in range(5):
                await aclient.exec_once("py", code="print(1)")
            lat = []
            for _ in range(40):
                t0 = time.perf_counter()
                await aclient.exec_once("py", code="print(1)")
                lat.append(time.perf_counter() - t0)
            return statistics.median(lat)

    with CollimateClient(url) as client:
        grade_batch(client, "py", cands, spec, seeds=["ab" * 32] * 256, concurrency=16)
        p50_blocking(client)
        asyncio.run(p50_async())
        print("ready", flush=True)
        for _line in sys.stdin:
            kind = _line.strip()
            t0 = time.perf_counter()
            if kind == "pack128":  # one pack on one CPU: its time is its CPU
                res = grade_batch(client, "py", cands[:128], spec, seeds=["ab" * 32] * 128,
                                  concurrency=1, pack=128)
            elif kind == "threads":  # 256 grade() from 32 threads, 8 each in turn
                import threading
                from collimate_rl import grade
                res = [None] * 256
                def work(at):
                    for i in range(at, 256, 32):
                        res[i] = grade(client, "py", cands[i], spec, seed="ab" * 32)
                pool = [threading.Thread(target=work, args=(at,)) for at in range(32)]
                for t in pool: t.start()
                for t in pool: t.join()
            else:
                res = grade_batch(client, "py", cands, spec, seeds=["ab" * 32] * 256,
                                  concurrency=16)
            dt = time.perf_counter() - t0
            print(json.dumps({"seconds": dt, "rewards": [r.reward for r in res],
                              "p50_s": p50_blocking(client),
                              "async_p50_s": asyncio.run(p50_async())}), flush=True)
finally:
    server.terminate(); server.wait(60)
"""
)


def paired(args: argparse.Namespace) -> None:
    """Both sides live at once, one documented call each in turn."""
    procs = {}
    for name in ("old", "new"):
        checkout = getattr(args, name)
        env = {**os.environ, "PYTHONPATH": str(checkout / "packages" / "collimate-rl-core" / "src")}
        procs[name] = subprocess.Popen(
            [sys.executable, "-c", SERVE], env=env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
    try:
        for proc in procs.values():
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        wall: dict[str, list[float]] = {"old": [], "new": []}
        cpu: dict[str, list[float]] = {"old": [], "new": []}
        p50: dict[str, list[float]] = {"old": [], "new": []}
        async_p50: dict[str, list[float]] = {"old": [], "new": []}
        rewards: list[object] = []
        for i in range(args.paired):
            for name in ("old", "new") if i % 2 == 0 else ("new", "old"):
                proc = procs[name]
                assert proc.stdin is not None and proc.stdout is not None
                before = machine_busy_seconds()
                proc.stdin.write(args.call + "\n")
                proc.stdin.flush()
                got = json.loads(proc.stdout.readline())
                cpu[name].append(machine_busy_seconds() - before)
                wall[name].append(float(got["seconds"]))
                p50[name].append(float(got["p50_s"]))
                async_p50[name].append(float(got["async_p50_s"]))
                rewards.append(got["rewards"])
            rates = " ".join(
                f"{n} {1000 * wall[n][-1]:.1f} ms p50 {1000 * p50[n][-1]:.2f}/"
                f"{1000 * async_p50[n][-1]:.2f} ms"
                for n in ("old", "new")
            )
            print(f"pair {i + 1}: {rates}", flush=True)
        assert all(r == rewards[0] for r in rewards), "the two sides' rewards differ"
        for label, data in (
            (f"{args.call} call, wall", wall),
            ("turn, machine busy CPU", cpu),
            ("one-shot p50, blocking", p50),
            ("one-shot p50, async", async_p50),
        ):
            ratios = [o / n for o, n in zip(data["old"], data["new"], strict=True)]
            print(
                f"{label}: old {1000 * statistics.median(data['old']):.2f} ms, "
                f"new {1000 * statistics.median(data['new']):.2f} ms; old/new per pair "
                "(above 1: new is faster): "
                f"median {statistics.median(ratios):.3f}, "
                f"quartiles {statistics.quantiles(ratios, n=4)[0]:.3f}-"
                f"{statistics.quantiles(ratios, n=4)[2]:.3f}"
            )
        print("rewards: identical on both sides")
    finally:
        for proc in procs.values():
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(120)


def side(checkout: Path) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(checkout / "packages" / "collimate-rl-core" / "src")}
    out = subprocess.run(
        [sys.executable, "-c", MEASURE], env=env, capture_output=True, text=True, check=True
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", type=Path, required=True, help="the older checkout")
    ap.add_argument("--new", type=Path, default=HERE.parent, help="default: this checkout")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--paired", type=int, default=0, help="N pairs of calls, both sides live")
    ap.add_argument(
        "--call",
        choices=("documented", "pack128", "threads"),
        default="documented",
        help="--paired: the documented call, one pack of 128 on one CPU "
        "(pack=128, concurrency=1), or 256 grade() from 32 threads",
    )
    args = ap.parse_args()
    if args.paired:
        paired(args)
        return
    runs: dict[str, list[dict[str, object]]] = {"old": [], "new": []}
    for r in range(args.rounds):
        for name in ("old", "new") if r % 2 == 0 else ("new", "old"):
            runs[name].append(side(getattr(args, name)))
            print(
                f"round {r + 1} {name}: {runs[name][-1]['p50_ms']:.2f} ms, "
                f"{runs[name][-1]['grades_s']:.0f} grades/s",
                flush=True,
            )
    assert all(run["rewards"] == runs["old"][0]["rewards"] for run in runs["old"] + runs["new"])
    med = {
        n: {k: statistics.median(float(x[k]) for x in v) for k in ("p50_ms", "grades_s")}
        for n, v in runs.items()
    }
    print(f"{'':<28}{'old':>10}{'new':>10}{'new/old':>10}")
    for key, label in (("p50_ms", "one-shot p50 (ms)"), ("grades_s", "documented call (grades/s)")):
        print(
            f"{label:<28}{med['old'][key]:>10.2f}{med['new'][key]:>10.2f}"
            f"{med['new'][key] / med['old'][key]:>10.2f}"
        )
    print("rewards: identical on both sides")


if __name__ == "__main__":
    main()
