"""The soak: many grades at high concurrency through the fault proxy, against
a real local backend running as a process of its own.

Every grade is accounted for exactly once (its reward, which must be the one
its candidate earns, or a typed infrastructure error); a few session round
trips ride along. At the end the server must count no live session (after
its idle reaper had its turn), its process tree must be back to what it was
after the warm-up, nothing it ever started may outlive it, and its resident
memory (sampled every 0.25 s) must not have grown with the number of grades.

    python reliability/soak.py --grades 10000 --concurrency 64
"""

from __future__ import annotations

import argparse
import contextlib
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from collimate_rl import CollimateClient, CollimateError, fresh_seed
from collimate_rl.testing.procs import (
    descendants,
    rss_mib,
    serve_process,
    still_alive,
    stop_process,
)
from collimate_rl.testing.proxy import FAULTS, FaultProxy
from collimate_rl.testing.reliability import candidates, grade_outcome, settle_sessions

SESSION_TTL_S = 2.0


@dataclass
class SoakReport:
    grades: int = 0
    concurrency: int = 0
    rewarded: int = 0
    infra_errors: int = 0
    untyped: int = 0
    results_lost: int = 0  # grades without exactly one outcome
    wrong_rewards: int = 0  # an infra failure (or anything else) became a reward
    session_trips: int = 0
    faults_injected: int = 0
    requests: int = 0  # requests the proxy saw (grades travel in packs)
    executed_twice: int = 0
    sessions_leaked: int = 0
    processes_leaked: int = 0  # processes of the server's tree alive after it stopped
    processes_baseline: int = 0
    processes_settled: int = 0
    processes_peak: int = 0
    rss_mib: list[float] = field(default_factory=list)
    seconds: float = 0.0
    health: dict[str, Any] = field(default_factory=dict)

    @property
    def rss_growth_mib(self) -> float:
        if len(self.rss_mib) < 4:
            return 0.0
        k = max(1, len(self.rss_mib) // 5)
        first, last = sorted(self.rss_mib[:k]), sorted(self.rss_mib[-k:])
        return last[len(last) // 2] - first[len(first) // 2]

    @property
    def rss_flat(self) -> bool:
        base = self.rss_mib[0] if self.rss_mib else 0.0
        return self.rss_growth_mib <= max(16.0, 0.15 * base)


def run_soak(
    grades: int, concurrency: int, *, fault_rate: float = 0.1, seed: int = 1
) -> SoakReport:
    report = SoakReport(grades=grades, concurrency=concurrency)
    server, url = serve_process("--session-ttl", str(SESSION_TTL_S))
    direct = CollimateClient(url, timeout=30)
    seen_procs: dict[int, int] = {}
    stop_sampling = threading.Event()
    started = time.monotonic()
    try:
        with FaultProxy(url, delay_s=6.0) as proxy:
            client = CollimateClient(proxy.url, timeout=5, retries=3, backoff=0.05, retry_budget=5)
            cands = candidates(grades, fresh_seed()[:8])
            outcomes: list[list[str]] = [[] for _ in cands]
            lock = threading.Lock()

            def one(i: int) -> None:
                got = grade_outcome(client, cands[i])
                with lock:
                    outcomes[i].append(got)
                if i % 50 == 25:
                    session_trip(client, direct)

            def sample() -> None:
                while not stop_sampling.wait(0.25):
                    now = descendants(server.pid)
                    seen_procs.update(now)
                    report.processes_peak = max(report.processes_peak, len(now))
                    report.rss_mib.append(rss_mib(server.pid))

            # warm-up without faults: the baseline is a server that has served
            warm = min(200, max(20, grades // 20))
            with ThreadPoolExecutor(concurrency) as pool:
                list(pool.map(one, range(warm)))
            wait_quiet(direct)
            report.processes_baseline = len(descendants(server.pid))
            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            proxy.randomize(fault_rate, FAULTS, match="any", seed=seed)
            with ThreadPoolExecutor(concurrency) as pool:
                list(pool.map(one, range(warm, grades)))
            proxy.clear()
            stop_sampling.set()
            sampler.join()
            client.close()
            wait_quiet(direct)
            stats = proxy.snapshot()
            report.faults_injected = sum(stats.injected.values())
            report.requests = sum(stats.seen.values())
            report.executed_twice = stats.duplicates("exec", "one_shot")
            for got in outcomes:
                if len(got) != 1:
                    report.results_lost += 1
                    continue
                report.rewarded += got[0] == "ok"
                report.infra_errors += got[0] == "infra"
                report.wrong_rewards += got[0] == "wrong"
                report.untyped += got[0].startswith("untyped")
            report.session_trips = sum(1 for i in range(grades) if i % 50 == 25)
        counters = settle_sessions(direct, SESSION_TTL_S * 5 + 10)
        report.sessions_leaked = counters.sessions + abs(
            counters.sessions_created - counters.sessions_ended - counters.sessions
        )
        report.health = direct.health()
        report.processes_settled = len(descendants(server.pid))
        seen_procs.update(descendants(server.pid))
    finally:
        direct.close()
        stop_process(server)
    time.sleep(0.5)
    report.processes_leaked = still_alive(seen_procs)
    report.seconds = time.monotonic() - started
    return report


def session_trip(client: CollimateClient, direct: CollimateClient) -> None:
    """Create, exec, delete through the proxy; a session whose id came back
    is deleted directly whatever happened."""
    sid = None
    try:
        sid = client.create_session("py")["session_id"]
        client.session_exec(sid, code="print(1)", seed=fresh_seed())
        client.delete_session(sid)
    except CollimateError:
        pass
    finally:
        if sid is not None:
            with contextlib.suppress(CollimateError):
                direct.delete_session(sid)


def wait_quiet(direct: CollimateClient, limit_s: float = 60.0) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        h = direct.health()
        if not h.get("inflight") and not h.get("running") and not h.get("queued"):
            return
        time.sleep(0.1)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--grades", type=int, default=10_000)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--fault-rate", type=float, default=0.1)
    args = p.parse_args(argv)
    r = run_soak(args.grades, args.concurrency, fault_rate=args.fault_rate)
    for k, v in vars(r).items():
        if k not in ("rss_mib", "health"):
            print(f"{k:20} {v}")
    print(f"rss growth (MiB)     {r.rss_growth_mib:.1f} ({'flat' if r.rss_flat else 'GROWING'})")
    bad = (
        r.results_lost
        + r.wrong_rewards
        + r.untyped
        + r.executed_twice
        + r.sessions_leaked
        + r.processes_leaked
    )
    return 1 if bad else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
