"""Throughput of the local backend's SandboxFusion ``/run_code``, as verl's
sandbox_fusion reward drives it, beside SandboxFusion's own figure.

Not a test: run it by hand, ``hatch run bench:one benchmarks/bench_sandbox_fusion.py``.

Why: verl's sandbox_fusion reward can point at our backend unchanged.

The backend runs as its own process, started the documented way
(``python -m collimate_rl.local_backend``), once with its isolation
(``--isolation auto``: namespaced clones where the machine allows) and once
without (``--isolation process``). Each is driven as verl's
``check_correctness`` drives a SandboxFusion server: threads (32 by default,
verl's pool is ``max(32, 5 * CPUs)``), each POSTing the body verl's
``call_sandbox_api`` sends (a stdin-reading python program, ``run_timeout``
10, ``memory_limit_MB`` 1024, ``files`` ``{}``, ``fetch_files`` ``[]``),
one keep-alive connection per thread. Every answer is checked (``Success``,
the right stdout); a wrong one is counted, never timed as a success. Beside
it, in interleaved rounds, the same threads send the daemon wire's bare
``/v1/exec`` of the same print: what the exec path itself allows, so the
cost of ``/run_code``'s runner (a fork for the code, stdout and stderr
apart) shows.

SandboxFusion's own figure on this machine is printed beside ours as a
reference constant: it was measured earlier, with SandboxFusion's server on
this machine, and is NOT measured in this run (SandboxFusion is not
installed here).
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import threading
import time

from _results import add_out_option, write_results
from _sides import backend

#: SandboxFusion's /run_code on this machine, requests/s (NOT measured in
#: this run: reference figures measured earlier with SandboxFusion itself).
SANDBOX_FUSION_NO_ISOLATION = (62.0, 69.0)
SANDBOX_FUSION_ISOLATION = (8.0, 9.0)

#: What verl's call_sandbox_api posts for one test case.
BODY = {
    "compile_timeout": 10,
    "run_timeout": 10,
    "code": "a, b = map(int, input().split())\nprint(a + b)\n",
    "stdin": "20 22\n",
    "memory_limit_MB": 1024,
    "language": "python",
    "files": {},
    "fetch_files": [],
}
EXPECTED = "42\n"


#: The same work as a bare daemon-wire exec (no stdin, stdout and stderr merged):
#: what /run_code costs on top of the backend's own exec path.
BARE_EXEC = {"template_id": "py", "code": "print(20 + 22)"}


def drive(
    url: str, threads: int, requests: int, path: str = "/run_code"
) -> tuple[float, list[float], int]:
    """``requests`` POSTs from ``threads`` threads: (req/s, latencies, bad answers)."""
    host, port = url.removeprefix("http://").split(":")
    payload = json.dumps(BODY if path == "/run_code" else BARE_EXEC).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    lock = threading.Lock()
    left = [requests]
    latencies: list[float] = []
    bad = [0]

    def worker() -> None:
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        try:
            while True:
                with lock:
                    if left[0] == 0:
                        return
                    left[0] -= 1
                t0 = time.perf_counter()
                conn.request("POST", path, body=payload, headers=headers)
                response = conn.getresponse()
                answer = json.loads(response.read())
                took = time.perf_counter() - t0
                if path == "/run_code":
                    ok = (
                        answer.get("status") == "Success"
                        and answer["run_result"]["stdout"] == EXPECTED
                    )
                else:
                    ok = answer.get("stdout") == EXPECTED
                ok = ok and response.status == 200
                with lock:
                    latencies.append(took)
                    bad[0] += not ok
        finally:
            conn.close()

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    started = time.perf_counter()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    wall = time.perf_counter() - started
    return requests / wall, latencies, bad[0]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=32)
    ap.add_argument("--requests", type=int, default=600, help="per round")
    ap.add_argument("--rounds", type=int, default=3)
    add_out_option(ap)
    args = ap.parse_args(argv)

    rows = []
    asked: list[str] = []
    for isolation, reference in (
        ("process", SANDBOX_FUSION_NO_ISOLATION),
        ("auto", SANDBOX_FUSION_ISOLATION),
    ):
        asked.append(isolation)
        cmd = [sys.executable, "-m", "collimate_rl.local_backend", "--isolation", isolation]
        with backend(cmd) as url:
            conn = http.client.HTTPConnection(*url.removeprefix("http://").split(":"))
            conn.request("GET", "/v1/health")
            health = json.loads(conn.getresponse().read())
            conn.close()
            drive(url, args.threads, 2 * args.threads)  # warm-up
            rates, lats, bad, bare = [], [], 0, []
            for _ in range(args.rounds):  # the two kinds of request interleaved
                rate, latencies, wrong = drive(url, args.threads, args.requests)
                rates.append(rate)
                lats.extend(latencies)
                bad += wrong
                rate, _, wrong = drive(url, args.threads, args.requests, "/v1/exec")
                bare.append(rate)
                bad += wrong
        lats.sort()
        rows.append(
            (
                health["isolation"],
                health["isolation_detail"],
                statistics.median(rates),
                min(rates),
                max(rates),
                lats[len(lats) // 2] * 1000,
                lats[int(len(lats) * 0.95)] * 1000,
                bad,
                reference,
                statistics.median(bare),
            )
        )

    print(
        f"/run_code throughput, {args.threads} threads, {args.requests} requests x "
        f"{args.rounds} rounds (median round; min-max)"
    )
    print(
        f"{'collimate-rl isolation':<24} {'req/s':>7} {'min-max':>13} {'p50 ms':>7} "
        f"{'p95 ms':>7} {'bad':>4} {'bare exec':>9}   {'SandboxFusion req/s*':>20} {'ratio':>11}"
    )
    for iso, _detail, med, lo, hi, p50, p95, bad, ref, bare in rows:
        ratio = f"{med / ref[1]:.1f}-{med / ref[0]:.1f}x"
        label = "none (process)" if iso == "process" else iso
        sf = f"{ref[0]:.0f}-{ref[1]:.0f}" + (" (none)" if iso == "process" else " (isolated)")
        print(
            f"{label:<24} {med:>7.1f} {f'{lo:.1f}-{hi:.1f}':>13} {p50:>7.1f} {p95:>7.1f} "
            f"{bad:>4} {bare:>9.1f}   {sf:>20} {ratio:>11}"
        )
    for iso, detail, *_ in rows:
        print(f"  {iso}: {detail}")
    print(
        "bare exec: the daemon wire's POST /v1/exec of print(20 + 22), same threads, "
        "interleaved rounds (what the backend's exec path itself allows)"
    )
    print(
        "ratio: our /run_code req/s over SandboxFusion's (same isolation column).\n"
        "* SandboxFusion's figures on this machine are reference constants measured earlier "
        "with SandboxFusion itself: NOT measured in this run."
    )
    figures = {
        "threads": args.threads,
        "requests_per_round": args.requests,
        # by the --isolation asked for (where namespaces are refused, both are "process")
        "backends": {
            mode: {
                "isolation": iso,
                "detail": detail,
                "run_code_req_per_s": med,
                "run_code_req_per_s_range": [lo, hi],
                "run_code_p50_ms": p50,
                "run_code_p95_ms": p95,
                "bad_answers": bad,
                "bare_exec_req_per_s": bare,
                "sandbox_fusion_req_per_s_not_measured_here": list(ref),
            }
            for mode, (iso, detail, med, lo, hi, p50, p95, bad, ref, bare) in zip(
                asked, rows, strict=True
            )
        },
    }
    write_results(__file__, args, figures, [])
    return 1 if any(row[7] for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
