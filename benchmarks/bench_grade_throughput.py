"""GRPO-group grading throughput, side by side with collimate-rl 0.5.0 (not a test).

One group = 256 candidates graded with ``PropertyReward(k=16)`` under one CRN
seed. Each side runs its own local backend as a separate process on loopback,
and its own client in another process, in the same run, rounds interleaved
(ours, theirs, ours, ...) so both see the same machine noise:

* ours: ``python -m collimate_rl.local_backend`` (namespaced clones) and
  ``grade_batch_async`` with an ``AsyncCollimateClient`` (one event loop, no
  threads); ``grade_batch`` (threads) is reported too; on the built-in ``py``
  template (``--template``), which preloads the grader runtime from its
  file (not the ``collimate_rl`` package: a bigger warm interpreter makes
  every fork dearer), so after the first grade the SDK sends only the
  grader's config and the candidate (see ``collimate_rl.rewards.program``).
  Released clones are wiped and reused between grades; the server paces
  one-shots to the CPUs (``--run-slots``, one per CPU); in the guest each
  candidate runs in a process of its own, apart from the grader (so it
  cannot write its own verdict: one more fork per grade than 0.5.0's
  in-process grader pays);
* theirs: collimate-rl==0.5.0's ``python -m collimate_rl.local_backend`` and its
  ``grade_batch`` (threads, its default concurrency of 24), from the venv at
  ``--peer`` (default ``/tmp/peer``; created in ``~/.cache`` with pip when
  missing).

Both sides grade the same candidates with the same seed, so their rewards must
agree exactly (checked and printed). Prints grades/s per round, the medians,
and the ratio.

    python benchmarks/bench_grade_throughput.py [--n 256] [--k 16] [--rounds 3]
        [--concurrency 32] [--sync-concurrency 24] [--peer /tmp/peer] [--no-sync]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from collimate_rl import (
    AsyncCollimateClient,
    CollimateClient,
    PropertyReward,
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"backend {url} exited with {proc.returncode}:\n{tail}")
        try:
            if httpx.get(f"{url}/v1/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"backend {url} did not become healthy")


def peer_env() -> dict[str, str]:
    """The peer's own interpreter and packages only (no PYTHONPATH of ours)."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


@contextmanager
def backend(cmd: list[str], port: int, env: dict[str, str] | None = None) -> Iterator[str]:
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "backend.log"
        with log.open("wb") as sink:
            proc = subprocess.Popen(
                cmd,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=tmp,
                env=env,
            )
        try:
            wait_healthy(url, proc, log)
            yield url
        finally:
            _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=30)


def peer_python(peer: Path) -> Path:
    """The 0.5.0 interpreter: ``--peer``, else a venv made once in ~/.cache."""
    python = peer / "bin" / "python"
    if python.exists():
        return python
    cache = Path.home() / ".cache" / "collimate-rl-bench" / "peer-0.5.0"
    python = cache / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(cache)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "collimate-rl==0.5.0"], check=True
        )
    return python


def ours_async(
    url: str,
    cands: list[str],
    spec: PropertyReward,
    concurrency: int,
    template: str,
    pack: int | None = None,
) -> tuple[float, list[float]]:
    async def run() -> tuple[float, list[float]]:
        async with AsyncCollimateClient(url) as client:
            await grade_batch_async(
                client, template, cands[:16], spec, seeds=[SEED] * 16, pack=pack
            )
            t0 = time.perf_counter()
            res = await grade_batch_async(
                client,
                template,
                cands,
                spec,
                seeds=[SEED] * len(cands),
                concurrency=concurrency,
                pack=pack,
            )
            if pack is not None and not all("pack" in r.raw for r in res):
                raise RuntimeError("some candidates were not graded in a pack")
            return time.perf_counter() - t0, [r.reward for r in res]

    return asyncio.run(run())


def ours_sync(
    url: str, cands: list[str], spec: PropertyReward, concurrency: int, template: str
) -> tuple[float, list[float]]:
    with CollimateClient(url) as client:
        grade_batch(client, template, cands[:16], spec, seeds=[SEED] * 16)
        t0 = time.perf_counter()
        res = grade_batch(
            client, template, cands, spec, seeds=[SEED] * len(cands), concurrency=concurrency
        )
        return time.perf_counter() - t0, [r.reward for r in res]


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
) -> tuple[float, list[float]]:
    """0.5.0's backend is a stdlib ThreadingHTTPServer (listen backlog 5): at
    its default ``concurrency=24`` it resets connections and the group fails.
    Use the highest concurrency it survives (``--peer-concurrency`` first)."""
    last: Exception | None = None
    for conc in dict.fromkeys([args.peer_concurrency, 24, 12, 8, 4, 2, 1]):
        try:
            result = theirs(python, url, args.n, args.k, conc)
        except RuntimeError as exc:
            last = exc
            continue
        args.peer_concurrency = conc
        return result
    raise RuntimeError(f"0.5.0 failed at every concurrency: {last}")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=32, help="ours, async")
    ap.add_argument("--sync-concurrency", type=int, default=24, help="ours, threads")
    ap.add_argument("--template", default="py", help="our template to grade on")
    ap.add_argument("--peer", type=Path, default=Path("/tmp/peer"))
    ap.add_argument("--peer-concurrency", type=int, default=24)
    ap.add_argument("--no-sync", action="store_true", help="skip the threaded grade_batch")
    ap.add_argument(
        "--pack", type=int, default=None, help="ours, packed: candidates per exec (default: n/CPUs)"
    )
    ap.add_argument(
        "--pack-concurrency",
        type=int,
        default=len(os.sched_getaffinity(0)),
        help="ours, packed: execs in flight (default: one per CPU)",
    )
    args, _ = ap.parse_known_args(argv)

    spec = PropertyReward(reference=REFERENCE, generator=GENERATOR, k=args.k)
    cands = [VARIANTS[i % len(VARIANTS)] for i in range(args.n)]
    python = peer_python(args.peer)
    ours_cmd = [
        sys.executable, "-m", "collimate_rl.local_backend", "--host", "127.0.0.1",
    ]  # fmt: skip
    peer_cmd = [str(python), "-m", "collimate_rl.local_backend", "--template", "py"]
    if args.pack is None:
        args.pack = -(-args.n // args.pack_concurrency)  # one pack per exec in flight
    packed = f"ours async pack={args.pack}"
    rates: dict[str, list[float]] = {"ours async": [], "ours sync": [], packed: [], "0.5.0": []}
    rewards: dict[str, list[float]] = {}
    p_ours, p_peer = free_port(), free_port()
    print(f"{args.n} candidates, PropertyReward(k={args.k}), CRN seed, {os.cpu_count()} CPUs")
    with (
        backend([*ours_cmd, "--port", str(p_ours)], p_ours) as ours_url,
        backend([*peer_cmd, "--port", str(p_peer)], p_peer, peer_env()) as peer_url,
    ):
        print(f"ours: {httpx.get(ours_url + '/v1/health').json().get('isolation_detail', '?')}")
        for rnd in range(1, args.rounds + 1):
            dt, rw = ours_async(ours_url, cands, spec, args.concurrency, args.template)
            rates["ours async"].append(args.n / dt)
            rewards["ours async"] = rw
            dt_k, rw_k = ours_async(
                ours_url, cands, spec, args.pack_concurrency, args.template, args.pack
            )
            rates[packed].append(args.n / dt_k)
            rewards[packed] = rw_k
            if not args.no_sync:
                dt_s, rw_s = ours_sync(ours_url, cands, spec, args.sync_concurrency, args.template)
                rates["ours sync"].append(args.n / dt_s)
                rewards["ours sync"] = rw_s
            dt_p, rw_p = theirs_best_effort(python, peer_url, args)
            rates["0.5.0"].append(args.n / dt_p)
            rewards["peer"] = rw_p
            line = "  ".join(f"{name} {r[-1]:6.1f}/s" for name, r in rates.items() if r)
            print(f"round {rnd}: {line}", flush=True)
    agree = all(rw == rewards["peer"] for rw in rewards.values())
    med = {name: statistics.median(r) for name, r in rates.items() if r}
    print("median grades/s: " + ", ".join(f"{k} {v:.1f}" for k, v in med.items()))
    print(f"0.5.0 ran at concurrency {args.peer_concurrency} (the highest it survived)")
    print(f"rewards identical to 0.5.0's (same seed, same candidates): {agree}")
    for name, value in med.items():
        if name != "0.5.0":
            print(f"ratio {name} / 0.5.0: {value / med['0.5.0']:.1f}x")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
