"""What carrying a pack costs the guest, apart from its candidates (not a test).

Why: a pack rides one exec, and every extra pack pays for its vehicle. A
longer-lived vehicle is measured here before it is built, on one local
backend with one run slot:

* each vehicle running ``pass``: a one-shot exec (a fresh clone, then its
  wipe), an exec in a kept session, a cell of a kept kernel;
* a *feeder*: an exec in a kept session handing 16 KB to a process left
  running there (over an abstract unix socket) and printing the 2 KB it
  answers: what a pack would cost if a grader outlived its packs;
* ``grade_batch`` packs of 2, 8 and 32 (``pack=N``): the line through them
  gives a pack's fixed cost and a candidate's.

Guest CPU is the own and reaped children's CPU of every process under this
one, counted once the server is idle again; medians of the rounds.

    python benchmarks/bench_pack_vehicles.py [--rounds 3] [--calls 60]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

from _results import add_out_option, write_results
from bench_pack_cpu import SPEC, VARIANTS, guest_cpu_s, settle

from collimate_rl import CollimateClient, Sandbox, grade_batch
from collimate_rl.local_backend import LocalCollimateBackend

PACK_SIZES = (2, 8, 32)

#: Started once in the kept session: a process that outlives the exec
#: (double fork, its own session) and answers every connection.
LISTENER = r"""
import os, socket
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(b"\0bench-pack-vehicles")
listener.listen(8)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        while True:
            conn, _ = listener.accept()
            size = int.from_bytes(conn.recv(4), "big")
            got = 0
            while got < size:
                got += len(conn.recv(size - got))
            conn.sendall(b"v" * 2048)
            conn.close()
    os._exit(0)
"""
FEEDER = r"""
import socket
conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.connect(b"\0bench-pack-vehicles")
conn.sendall((16384).to_bytes(4, "big") + b"p" * 16384)
answer = b""
while chunk := conn.recv(65536):
    answer += chunk
print(len(answer))
"""


def cost_ms(client: CollimateClient, calls: int, call: Callable[[], object]) -> tuple[float, float]:
    """Guest CPU and wall time of one ``call``, in ms, the mean of ``calls``."""
    settle(client)
    before = guest_cpu_s(os.getpid())
    started = time.perf_counter()
    for _ in range(calls):
        call()
    wall = (time.perf_counter() - started) / calls * 1000
    settle(client)
    return (guest_cpu_s(os.getpid()) - before) / calls * 1000, wall


def fixed_and_per_candidate(costs: dict[int, float]) -> tuple[float, float]:
    """The least-squares line through (pack size, guest ms a pack): its
    value at zero candidates (the fixed cost a pack) and its slope."""
    slope, intercept = statistics.linear_regression(list(costs), list(costs.values()))
    return intercept, slope


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=60, help="calls per vehicle and round")
    add_out_option(ap)
    args = ap.parse_args()
    seen: dict[str, list[tuple[float, float]]] = {}
    fixed: list[float] = []
    each: list[float] = []
    with LocalCollimateBackend(run_slots=1) as backend, CollimateClient(backend.base_url) as c:
        for _ in range(3):  # warm: twins wanted, clones made
            grade_batch(c, "py", [VARIANTS[0]] * 8, SPEC)
        with Sandbox("py", client=c) as box:
            kernel = box.kernel()
            kernel.run("x = 1")
            box.exec(LISTENER)
            if box.exec(FEEDER).stdout.strip() != "2048":
                raise SystemExit("the feeder did not reach the process left in the session")
            # name -> (call, calls a round, pack size or 0)
            vehicles: dict[str, tuple[Callable[[], object], int, int]] = {
                "one-shot exec": (lambda: c.exec_once("py", code="pass"), args.calls, 0),
                "exec in a kept session": (lambda: box.exec("pass"), args.calls, 0),
                "cell of a kept kernel": (lambda: kernel.run("pass"), args.calls, 0),
                "feeder in a kept session": (lambda: box.exec(FEEDER), args.calls, 0),
            }
            for size in PACK_SIZES:
                candidates = [VARIANTS[0]] * size
                vehicles[f"pack of {size}"] = (
                    lambda candidates=candidates: grade_batch(
                        c, "py", candidates, SPEC, pack=len(candidates)
                    ),
                    max(10, args.calls // 3),
                    size,
                )
            for r in range(args.rounds):
                packs: dict[int, float] = {}
                for name, (call, calls, size) in vehicles.items():
                    guest, wall = cost_ms(c, calls, call)
                    seen.setdefault(name, []).append((guest, wall))
                    print(f"round {r + 1}: {name:26} guest {guest:6.1f} ms  wall {wall:6.1f} ms")
                    if size:
                        packs[size] = guest
                fixed_ms, per_ms = fixed_and_per_candidate(packs)
                fixed.append(fixed_ms)
                each.append(per_ms)
                print(
                    f"round {r + 1}: a pack costs {fixed_ms:.1f} ms fixed "
                    f"and {per_ms:.2f} ms a candidate",
                    flush=True,
                )
    print("medians of the rounds:")
    figures: dict[str, object] = {}
    for name, rounds in seen.items():
        guest = statistics.median(g for g, _ in rounds)
        wall = statistics.median(w for _, w in rounds)
        figures[name] = {"guest_ms": round(guest, 2), "wall_ms": round(wall, 2)}
        print(f"  {name:26} guest {guest:6.1f} ms  wall {wall:6.1f} ms")
    figures["pack_fixed_ms"] = round(statistics.median(fixed), 2)
    figures["pack_per_candidate_ms"] = round(statistics.median(each), 2)
    print(
        f"a pack: {figures['pack_fixed_ms']} ms fixed (rounds {min(fixed):.1f} to "
        f"{max(fixed):.1f}), {figures['pack_per_candidate_ms']} ms a candidate"
    )
    write_results(__file__, args, figures, [])


if __name__ == "__main__":
    main()
