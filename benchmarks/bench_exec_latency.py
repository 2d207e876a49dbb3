"""Latency of a trivial one-shot python exec: our local backend vs the local
backend of the published ``collimate-rl==0.5.0``, side by side in one run.

Not a test (timings on a shared machine are noise to a test suite): run it
by hand, e.g. ``hatch run bench:one benchmarks/bench_exec_latency.py``.

Why: a lone exec's overhead is what every unpacked grade and tool call pays.
Both servers run as processes of their own, started the documented way
(``python -m collimate_rl.local_backend --port P``; the peer from a venv
holding 0.5.0: ``/tmp/peer`` if present, else one built in a cache dir), and
are sent the same ``POST /v1/exec {"template_id": "py", "code": "print(1)"}``
one at a time after a warm-up, rounds interleaved. Two clients measure in
turn: the standard library's ``http.client`` (the target is judged on it:
it adds the least of its own, so it times the backends) and ``httpx``, which
our SDK uses. ``--throughput 1,4,16`` also measures execs/s at each
concurrency. Target: our p50 at most one fifth of theirs.
"""

from __future__ import annotations

import argparse
import http.client
import importlib.util
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from _results import add_out_option, write_results

from collimate_rl.reports import bin_counts, round_edges

HERE = Path(__file__).resolve().parent
PEER_VENV = HERE.parent / "integration-tests" / "compat" / "peer_venv.py"
BODY = {"template_id": "py", "code": "print(1)"}


def _peer_venv() -> Any:
    spec = importlib.util.spec_from_file_location("_peer_venv", PEER_VENV)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A backend process on a free port, stopped (SIGTERM, then KILL) on exit."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.name = name
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [*argv, "--port", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            cwd=os.getcwd(),
            env=env,
        )
        self.log: list[str] = []
        threading.Thread(target=self._drain_log, daemon=True).start()

    def _drain_log(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line)

    def wait_ready(self, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited: {''.join(self.log)}")
            try:
                if httpx.get(self.url + "/v1/health", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"{self.name} did not come up: {''.join(self.log)}")

    def __enter__(self) -> Server:
        try:
            self.wait_ready()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def measure_raw(url: str, n: int, warmup: int) -> list[float]:
    """``n`` sequential one-shot execs over one keep-alive ``http.client``
    connection (ms), the body encoded once."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=60)
    payload = json.dumps(BODY).encode()
    headers = {"content-type": "application/json"}
    samples: list[float] = []
    try:
        for i in range(warmup + n):
            t0 = time.perf_counter()
            conn.request("POST", "/v1/exec", payload, headers)
            resp = conn.getresponse()
            raw = resp.read()
            elapsed = (time.perf_counter() - t0) * 1000.0
            body = json.loads(raw)
            if resp.status != 200 or body.get("stdout") != "1\n":
                raise RuntimeError(f"bad answer from {url}: {resp.status} {body}")
            if i >= warmup:
                samples.append(elapsed)
    finally:
        conn.close()
    return samples


def measure(url: str, n: int, warmup: int) -> list[float]:
    """``n`` sequential one-shot execs over one keep-alive httpx connection (ms)."""
    samples: list[float] = []
    with httpx.Client(base_url=url, timeout=60) as client:
        for i in range(warmup + n):
            t0 = time.perf_counter()
            r = client.post("/v1/exec", json=BODY)
            elapsed = (time.perf_counter() - t0) * 1000.0
            body = r.json()
            if r.status_code != 200 or body.get("stdout") != "1\n":
                raise RuntimeError(f"bad answer from {url}: {r.status_code} {body}")
            if i >= warmup:
                samples.append(elapsed)
    return samples


def throughput(url: str, n: int, concurrency: int) -> float:
    """Execs per second with ``concurrency`` clients in parallel threads."""
    from concurrent.futures import ThreadPoolExecutor

    per_worker = max(1, n // concurrency)

    def worker(_: int) -> None:
        measure(url, per_worker, 2)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(worker, range(concurrency)))
    return (per_worker + 2) * concurrency / (time.perf_counter() - t0)


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-n", type=int, default=300, help="measured execs per backend (default 300)")
    p.add_argument("--warmup", type=int, default=10, help="unmeasured execs per round")
    p.add_argument(
        "--rounds",
        type=int,
        default=10,
        help="alternate the backends this many times (short rounds: the machine's drift "
        "then hits both backends alike)",
    )
    p.add_argument("--isolation", default="auto", choices=("auto", "namespaces", "process"))
    p.add_argument(
        "--throughput",
        type=_concurrencies,
        default=[],
        metavar="C[,C...]",
        help="also measure execs/s with C concurrent clients, for each C given "
        "(e.g. 1,4,16; default: off)",
    )
    add_out_option(p)
    args = p.parse_args(argv)

    ours_argv = [sys.executable, "-m", "collimate_rl.local_backend", "--isolation", args.isolation]
    peer_venv = _peer_venv()
    peer_argv = [str(peer_venv.peer_python()), "-I", "-m", "collimate_rl.local_backend"]
    results: dict[str, list[float]] = {"ours": [], "peer 0.5.0": []}
    via_httpx: dict[str, list[float]] = {"ours": [], "peer 0.5.0": []}
    with (
        Server("ours", ours_argv) as ours,
        Server("peer 0.5.0", peer_argv, peer_venv.clean_env()) as peer,
    ):
        isolation = httpx.get(ours.url + "/v1/health").json().get("isolation", "?")
        per_round = max(1, args.n // args.rounds)
        for _ in range(args.rounds):  # interleave, so machine noise hits both alike
            results["ours"] += measure_raw(ours.url, per_round, args.warmup)
            results["peer 0.5.0"] += measure_raw(peer.url, per_round, args.warmup)
            via_httpx["ours"] += measure(ours.url, per_round, args.warmup)
            via_httpx["peer 0.5.0"] += measure(peer.url, per_round, args.warmup)
        rates: dict[str, list[float]] = {"ours": [], "peer 0.5.0": []}
        for clients in args.throughput:
            rates["ours"].append(throughput(ours.url, args.n, clients))
            rates["peer 0.5.0"].append(throughput(peer.url, args.n, clients))

    print(f"trivial one-shot python exec ({BODY['code']!r}), sequential, keep-alive")
    print(f"our isolation: {isolation}; {len(results['ours'])} samples each")
    print(f"{'client':<12} {'backend':<12} {'p50 ms':>9} {'p99 ms':>9} {'mean ms':>9}")
    for client, table in (("http.client", results), ("httpx", via_httpx)):
        for name, samples in table.items():
            print(
                f"{client:<12} {name:<12} {pct(samples, 0.5):>9.2f} {pct(samples, 0.99):>9.2f} "
                f"{statistics.fmean(samples):>9.2f}"
            )
    ratio = pct(results["peer 0.5.0"], 0.5) / pct(results["ours"], 0.5)
    ratio99 = pct(results["peer 0.5.0"], 0.99) / pct(results["ours"], 0.99)
    verdict = "meets" if ratio >= 5 else "MISSES"
    print(f"p50 speed-up: {ratio:.1f}x (p99: {ratio99:.1f}x) -- {verdict} the 5x target")
    hx = pct(via_httpx["peer 0.5.0"], 0.5) / pct(via_httpx["ours"], 0.5)
    print(f"(with httpx as the client: p50 speed-up {hx:.1f}x)")
    for name, per_c in rates.items():
        for clients, rate in zip(args.throughput, per_c, strict=True):
            print(f"throughput {name:<12} {rate:8.1f} execs/s with {clients} clients")
    _write(args, isolation, results, via_httpx, rates)
    return 0


def _concurrencies(text: str) -> list[int]:
    values = [int(part) for part in text.split(",") if part.strip()]
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"concurrencies >= 1, comma-separated: {text!r}")
    return values


#: The sides as the charts name them.
SIDES = {"ours": "ours", "peer 0.5.0": "collimate-rl 0.5.0"}


def _write(
    args: argparse.Namespace,
    isolation: str,
    results: dict[str, list[float]],
    via_httpx: dict[str, list[float]],
    rates: dict[str, list[float]],
) -> None:
    """The results JSON and its charts: percentiles, the latency
    distribution, and (with --throughput) execs/s against concurrency."""
    quantiles = (0.5, 0.9, 0.99)
    figures = {
        "isolation": isolation,
        "samples_per_side": len(results["ours"]),
        "percentiles_ms": {
            client: {
                SIDES[name]: {f"p{round(q * 100)}": pct(samples, q) for q in quantiles}
                for name, samples in table.items()
            }
            for client, table in (("http.client", results), ("httpx", via_httpx))
        },
        "samples_ms": {SIDES[name]: samples for name, samples in results.items()},
        "throughput_execs_per_s": {
            "clients": args.throughput,
            **{SIDES[name]: per_c for name, per_c in rates.items()},
        },
    }
    run = f"{len(results['ours'])} execs a side, {args.rounds} rounds"
    charts: list[dict[str, object]] = [
        {
            "name": "percentiles",
            "kind": "bar",
            "title": f"print(1) one-shot exec latency, sequential ({run})",
            "categories": [f"p{round(q * 100)}" for q in quantiles],
            "series": [
                {"name": SIDES[name], "values": [pct(samples, q) for q in quantiles]}
                for name, samples in results.items()
            ],
            "y_label": "latency (ms), lower is better",
            "x_label": "percentile (http.client, keep-alive)",
        }
    ]
    edges = list(round_edges(max(pct(samples, 0.95) for samples in results.values())))
    top = edges[-1]
    beyond = sum(s > top for samples in results.values() for s in samples)
    charts.append(
        {
            "name": "distribution",
            "kind": "histogram",
            "title": f"Latency distribution ({run}; {beyond} above {top:g} ms not drawn)",
            "edges": edges,
            "series": [
                {"name": SIDES[name], "values": _counts(samples, edges)}
                for name, samples in results.items()
            ],
            "y_label": "execs",
            "x_label": "latency (ms)",
        }
    )
    if args.throughput:
        charts.append(
            {
                "name": "concurrency",
                "kind": "line",
                "title": f"Execs/s against concurrent clients ({args.n} execs a point)",
                "x_values": args.throughput,
                "log_x": len(args.throughput) > 2,
                "series": [{"name": SIDES[name], "values": per_c} for name, per_c in rates.items()],
                "y_label": "execs per second, higher is better",
                "x_label": "concurrent clients (threads, one keep-alive connection each)",
            }
        )
    write_results(__file__, args, figures, charts)


def _counts(samples: list[float], edges: list[float]) -> list[int]:
    return list(bin_counts(samples, edges))


if __name__ == "__main__":
    sys.exit(main())
