"""A node lost in the middle of a batch: three local backends as processes
of their own (three nodes), one ``MultiNodeClient`` over them, and one of
them SIGKILLed (a machine gone, no goodbye) once a quarter of the batch is
graded.

Every grade is accounted for exactly once: its right reward, or a typed
infrastructure error (a request in flight on the lost node may have run,
so it is never sent elsewhere). None is graded twice, by the servers' own
counters: each surviving node ran exactly the requests the pool got
answers for from it, and the lost node (its count as it last reported it
before it went) ran no more than the pool sent it. The Ray plugin proves
the same on a real Ray cluster, a node removed from it
(``plugins/collimate-rl-ray/tests/test_ray_node_loss.py``).

    python reliability/node_loss.py --grades 1000 --concurrency 16
"""

from __future__ import annotations

import argparse
import os
import signal
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from collimate_rl import CollimateClient, CollimateError, MultiNodeClient
from collimate_rl.testing.procs import serve_process, stop_process
from collimate_rl.testing.reliability import candidates, grade_outcome

NODES = 3


@dataclass
class NodeLossReport:
    grades: int = 0
    rewarded: int = 0
    infra_errors: int = 0
    wrong: int = 0
    untyped: int = 0
    #: requests the lost node answered (or may have run) before it went
    lost_node_requests: int = 0
    #: survivors' runs against the pool's answers, and the lost node's
    #: runs beyond what it was sent: each must be 0
    miscounted: int = 0


def _execs_run(url: str) -> int:
    with CollimateClient(url, timeout=5, retries=0) as client:
        return int(client.health()["execs_run"])


def run_node_loss(grades: int, concurrency: int) -> NodeLossReport:
    report = NodeLossReport(grades=grades)
    servers = [serve_process("--run-slots", "1") for _ in range(NODES)]
    urls = [url for _, url in servers]
    lost_proc, lost_url = servers[-1]
    try:
        before = {url: _execs_run(url) for url in urls}
        reported = {"execs_run": before[lost_url]}
        stop_polling = threading.Event()

        def poll() -> None:
            with CollimateClient(lost_url, timeout=2, retries=0) as probe:
                while not stop_polling.is_set():
                    try:
                        reported["execs_run"] = int(probe.health()["execs_run"])
                    except CollimateError:
                        return
                    stop_polling.wait(0.05)

        graded = threading.Semaphore(0)
        pool = MultiNodeClient(urls)

        def one(candidate: str) -> str:
            outcome = grade_outcome(pool, candidate)  # type: ignore[arg-type]
            graded.release()
            return outcome

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        with ThreadPoolExecutor(concurrency) as workers:
            futures = [workers.submit(one, c) for c in candidates(grades, "node-loss")]
            for _ in range(grades // 4):
                graded.acquire()
            os.kill(lost_proc.pid, signal.SIGKILL)
            outcomes = [f.result() for f in futures]
        stop_polling.set()
        poller.join(5)
        seen = {n["endpoint"]: n for n in pool.nodes()}
        pool.close()
        for outcome in outcomes:
            if outcome == "ok":
                report.rewarded += 1
            elif outcome == "infra":
                report.infra_errors += 1
            elif outcome == "wrong":
                report.wrong += 1
            else:
                report.untyped += 1
        report.lost_node_requests = seen[lost_url]["answered"]
        for url in urls[:-1]:
            report.miscounted += abs(_execs_run(url) - before[url] - seen[url]["answered"])
        report.miscounted += max(
            0, reported["execs_run"] - before[lost_url] - seen[lost_url]["answered"]
        )
    finally:
        for proc, _ in servers:
            if proc.poll() is None:
                stop_process(proc)
    return report


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--grades", type=int, default=1000)
    p.add_argument("--concurrency", type=int, default=16)
    args = p.parse_args()
    print(run_node_loss(args.grades, args.concurrency))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
