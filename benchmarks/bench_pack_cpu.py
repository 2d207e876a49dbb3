"""CPU per graded candidate in a pack of 128, read from the guest's own
processes (not a test).

Why: the documented call is bound by what each candidate's process costs
(its fork, page faults and exit), so this is the figure the packed grader is
tuned on. A local backend runs in this process with one run slot (so
``pack="auto"`` makes one pack of the group) and the documented call grades
a ``PropertyReward(k=16)`` group. The guest's CPU is read from
``/proc/<pid>/stat`` of the server's descendants, their own and their reaped
children's (``cutime``/``cstime``), so it grows by exactly what the group
cost. Per round: **all in** (over the group's candidates, the pack's fixed
cost shared out) and **marginal** (a group of 128 less one of 8, over the
120 between). Each round also measures the machine's floor
(``FORK_FLOOR``: a fork and exit of a spawner-sized process, and one page
fault), which moves from day to day: read the figure against it. Target:
at most 2.5 ms a candidate all in.

    python benchmarks/bench_pack_cpu.py [--rounds 7] [--n 128]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from _results import add_out_option, write_results

from collimate_rl import CollimateClient, PropertyReward, grade_batch
from collimate_rl.local_backend import LocalCollimateBackend

TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")
SPEC = PropertyReward(
    reference="    return sum(c in 'aeiouAEIOU' for c in x)",
    generator="''.join(random.choice('abcdEIOUxyz') for _ in range(8))",
    k=16,
)
VARIANTS = (
    "def solve(x):\n    return sum(c in 'aeiouAEIOU' for c in x)\n",
    "def solve(x):\n    return len(x) // 3\n",
)


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, frontier = [], [root]
    while frontier:
        for kid in children.get(frontier.pop(), []):
            found.append(kid)
            frontier.append(kid)
    return found


def guest_cpu_s(root: int) -> float:
    """Own and reaped children's CPU of every live descendant of ``root``."""
    total = 0
    for pid in descendants(root):
        try:
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(fields[i]) for i in (11, 12, 13, 14))  # utime stime cutime cstime
    return total * TICK_S


#: A small interpreter timing its own forks, CPU of both sides per fork and
#: exit: bare, then holding 8 MB of written heap (about a spawner's 7 MB)
#: of which the child writes 300 pages (about a candidate's 281
#: copy-on-write faults). Prints the two, in ms.
FORK_FLOOR = """
import os
n = 300
heap = b""


def cost(pages):
    t0 = os.times()
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            for i in range(pages):
                heap[i * 4096] = 2
            os._exit(0)
        os.waitpid(pid, 0)
    t1 = os.times()
    spent = t1.user + t1.system + t1.children_user + t1.children_system
    return (spent - t0.user - t0.system - t0.children_user - t0.children_system) / n * 1000


bare = cost(0)
heap = bytearray(8 << 20)
for i in range(0, len(heap), 4096):
    heap[i] = 1
written = cost(300)

# one page fault, alone: the first write to each page of fresh memory
import mmap, time

pages = 8192
fresh = mmap.mmap(-1, pages * 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
spent = []
for value in (1, 2):  # (the second pass: the loop alone, every page present)
    t0 = time.process_time()
    for i in range(pages):
        fresh[i * 4096] = value
    spent.append(time.process_time() - t0)
print(bare, written, (spent[0] - spent[1]) / pages * 1e6)
"""


def fork_floor_ms() -> tuple[float, float, float]:
    """The machine's floor for a candidate's process, in ms of CPU (see
    ``FORK_FLOOR``): a bare fork and exit of ``python -S``, and one of a
    process the size of a spawner whose child writes 300 of its pages; and
    what one page fault costs here, in us (a first write to fresh memory)."""
    out = subprocess.run(
        [sys.executable, "-S", "-c", FORK_FLOOR], capture_output=True, text=True, check=True
    )
    bare, cow, fault = out.stdout.split()
    return float(bare), float(cow), float(fault)


def settle(client: CollimateClient) -> None:
    """Until the server ran everything (a clone's wipe after an exec included)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        h = client.health()
        if not h.get("inflight") and not h.get("running") and not h.get("queued"):
            break
        time.sleep(0.05)
    time.sleep(0.5)


def group_cost_s(client: CollimateClient, n: int, repeat: int) -> float:
    """The guest CPU of ``repeat`` groups of ``n``, per group."""
    candidates = [VARIANTS[i % 2] for i in range(n)]
    settle(client)
    before = guest_cpu_s(os.getpid())
    for _ in range(repeat):
        results = grade_batch(client, "py", candidates, SPEC)
        assert all(r.raw.get("pack", {}).get("size") == n for r in results), "not one pack"
        assert results[0].reward == 1.0 and not any(r.infra_error for r in results)
    settle(client)
    return (guest_cpu_s(os.getpid()) - before) / repeat


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--n", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=8, help="groups per measurement")
    add_out_option(ap)
    args = ap.parse_args()
    small = 8
    all_in, marginal, floor, cow, faults = [], [], [], [], []
    with LocalCollimateBackend(run_slots=1) as backend, CollimateClient(backend.base_url) as c:
        for _ in range(3):  # warm: twins wanted, clones made
            grade_batch(c, "py", [VARIANTS[0]] * args.n, SPEC)
        for r in range(args.rounds):
            big = group_cost_s(c, args.n, args.repeat)
            little = group_cost_s(c, small, args.repeat)
            bare, written, fault = fork_floor_ms()
            floor.append(bare)
            cow.append(written)
            faults.append(fault)
            all_in.append(big / args.n * 1000)
            marginal.append((big - little) / (args.n - small) * 1000)
            print(
                f"round {r + 1}: {big * 1000:.0f} ms a group of {args.n}, "
                f"{little * 1000:.0f} ms a group of {small}: all in {all_in[-1]:.2f} ms, "
                f"marginal {marginal[-1]:.2f} ms per candidate; "
                f"floor: a bare fork and exit {floor[-1]:.2f} ms, "
                f"with 300 pages written {cow[-1]:.2f} ms; a page fault {faults[-1]:.2f} us",
                flush=True,
            )
    for name, values, unit in (
        ("CPU per candidate, all in", all_in, " ms"),
        ("CPU per candidate, marginal", marginal, " ms"),
        ("the machine's floor, a bare fork and exit", floor, " ms"),
        ("the machine's floor, a spawner-sized fork writing 300 pages", cow, " ms"),
        ("the machine's page fault (a first write to fresh memory)", faults, " us"),
    ):
        print(
            f"{name}: median {statistics.median(values):.2f}{unit} "
            f"(rounds {min(values):.2f} to {max(values):.2f})"
        )
    print("target: at most 2.5 ms all in")
    figures = {
        "candidates": args.n,
        "small_group": small,
        "all_in_ms": all_in,
        "marginal_ms": marginal,
        "floor_bare_fork_ms": floor,
        "floor_fork_300_pages_ms": cow,
        "page_fault_us": faults,
    }
    write_results(__file__, args, figures, [])


if __name__ == "__main__":
    main()
