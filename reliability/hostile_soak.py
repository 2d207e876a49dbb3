"""The soak with a hostile minority: many grades at high concurrency, one
candidate in ten hostile, against a real local backend running as a process
of its own, after a clean soak of as many grades on the same server.

Hostile candidates do what a policy under RL pressure might to lower its
siblings' rewards or stall the step (stop or kill every process it can
reach, renice or limit the grader, leave CPU hogs or a SIGSTOP loop behind,
fork-bomb, exhaust memory or the disk, print forever, never finish), each
then printing a wrong answer if it still can. They are graded by the same
call as the honest ones (``grade`` from many threads: the coalescer packs
them together). What must hold:

* every honest candidate's reward is the one it earns, and none of them
  gets an infrastructure error;
* every hostile candidate scores 0.0 (an infrastructure error for one is
  counted too, apart: it drops a sample instead of penalising it);
* throughput stays within 2x the clean soak's, once the hostile candidates'
  own time is counted in: the mixed pass takes at most twice what its
  honest share took in the clean pass plus what its hostile candidates take
  graded by themselves (a third pass, the same call). Each hostile one is
  bounded by its own checks' timeouts plus slack, and what it burns there
  is its own; the raw ratio is printed beside it;
* the server's processes, memory and open files are back to the clean
  soak's end when the hostile one is over, and nothing it started outlives it.

    python reliability/hostile_soak.py --grades 10000 --concurrency 64
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from soak import wait_quiet

from collimate_rl import CollimateClient, CollimateError, fresh_seed, grade
from collimate_rl.rewards import StdioReward
from collimate_rl.testing.procs import (
    descendants,
    rss_mib,
    serve_process,
    still_alive,
    stop_process,
)

#: ``a + b`` from stdin; each test bounded (a looper costs 2 x this)
SPEC = StdioReward(
    [{"input": "3 4\n", "output": "7"}, {"input": "1 1\n", "output": "2"}], test_timeout=0.25
)
TIMEOUT_S = 10
#: processes of one idle clone (the clone, its standby exec, the standby's
#: clean twin), and fds the server holds for it (at most as many)
PER_CLONE = 3
HONEST = "a, b = map(int, input().split())\nprint(a + b)  # {n}\n"

_GRANDPARENT = (
    "def _up(pid):\n"
    "    return int(open('/proc/%d/stat' % pid).read().rsplit(')', 1)[1].split()[1])\n"
)
#: hostile kinds: each a stdio program, then a wrong answer where it gets there
HOSTILE: dict[str, str] = {
    "stops_the_grader": _GRANDPARENT + "for pid in (os.getppid(), _up(os.getppid())):\n"
    "    try:\n        os.kill(pid, signal.SIGSTOP)\n    except OSError:\n        pass\n",
    "kills_everything": "try:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass\n",
    "slows_and_limits_the_grader": _GRANDPARENT + "import resource\n"
    "for pid in (os.getppid(), _up(os.getppid())):\n"
    "    for act in (lambda: os.setpriority(os.PRIO_PROCESS, pid, 19),\n"
    "                lambda: os.sched_setaffinity(pid, {0}),\n"
    "                lambda: resource.prlimit(pid, resource.RLIMIT_NOFILE, (4, 4))):\n"
    "        try:\n            act()\n        except OSError:\n            pass\n",
    "leaves_cpu_hogs": (
        "for _ in range(4):\n"
        "    if os.fork() == 0:\n        os.setsid()\n        while True:\n            pass\n"
    ),
    "leaves_a_stopper": (
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    while True:\n"
        "        try:\n            os.kill(-1, signal.SIGSTOP)\n        except OSError:\n"
        "            pass\n"
        "        time.sleep(0.001)\n"
    ),
    "fork_bombs": (
        "end = time.monotonic() + 0.1\n"
        "while time.monotonic() < end:\n"
        "    try:\n        os.fork()\n    except OSError:\n        pass\n"
    ),
    "exhausts_memory": (
        "hoard = []\n"
        "for _ in range(2):\n    os.fork()\n"
        "try:\n    while True:\n        hoard.append(bytearray(32 << 20))\nexcept MemoryError:\n"
        "    pass\n"
    ),
    "fills_the_disk": (
        "for n in range(8):\n"
        "    try:\n"
        "        with open('/tmp/fill-%d' % n, 'wb') as fh:\n"
        "            fh.write(b'x' * (16 << 20))\n"
        "    except OSError:\n        break\n"
    ),
    "prints_forever": "while True:\n    sys.stdout.write('x' * 65536)\n",
    "never_finishes": "while True:\n    pass\n",
}
_HEAD = "import os, signal, sys, time\n"
_WRONG_ANSWER = "a, b = map(int, input().split())\nprint(a - b)  # {n}\n"


def hostile_candidate(kind: str, n: str) -> str:
    return _HEAD + HOSTILE[kind] + _WRONG_ANSWER.format(n=n)


@dataclass
class Pass:
    """One soak pass: what came of each kind of candidate."""

    grades: int = 0
    seconds: float = 0.0
    honest: int = 0
    honest_wrong: int = 0  # an honest candidate's reward was not the one it earns
    honest_infra: int = 0  # an honest candidate got an infrastructure error
    hostile: int = 0
    hostile_rewarded: int = 0  # a hostile candidate scored above 0.0
    hostile_infra: int = 0
    untyped: int = 0
    #: why honest candidates lost reward (the first few), for the log
    honest_wrong_details: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.grades / self.seconds if self.seconds else 0.0


@dataclass
class HostileSoakReport:
    concurrency: int = 0
    clean: Pass = field(default_factory=Pass)
    mixed: Pass = field(default_factory=Pass)
    hostile_alone: Pass = field(default_factory=Pass)
    processes_clean_end: int = 0
    processes_end: int = 0
    processes_leaked: int = 0  # started by the server, alive after it stopped
    fds_clean_end: int = 0
    fds_end: int = 0
    clones_clean_end: int = 0  # idle clones the server keeps warm
    clones_end: int = 0
    rss_clean_end_mib: float = 0.0
    rss_end_mib: float = 0.0

    @property
    def slowdown(self) -> float:
        """Clean grades/s over mixed grades/s."""
        return self.clean.rate / self.mixed.rate if self.mixed.rate else float("inf")

    @property
    def slowdown_beyond_own(self) -> float:
        """The mixed pass's time over what its parts take apart: its honest
        share of the clean pass, plus its hostile candidates by themselves."""
        apart = self.clean.seconds * self.mixed.honest / max(1, self.clean.grades)
        apart += self.hostile_alone.seconds
        return self.mixed.seconds / apart if apart else float("inf")

    @property
    def flat(self) -> bool:
        """Processes, open files and memory back to the clean pass's end,
        but for idle clones kept warm (up to 64 a template: a busier pass
        may leave more; each is at most :data:`PER_CLONE` processes and as
        many fds of the server), and memory within 16 MiB or 15%
        (allocator noise)."""
        warm = PER_CLONE * max(0, self.clones_end - self.clones_clean_end)
        return (
            # (+1 a clone: its standby's twin, forked once twins are wanted)
            self.processes_end <= self.processes_clean_end + warm + self.clones_end
            # (+1 a new clone: its standby twin's pipe, as its process above)
            and self.fds_end
            <= self.fds_clean_end + warm + max(0, self.clones_end - self.clones_clean_end)
            and self.rss_end_mib - self.rss_clean_end_mib
            <= max(16.0, 0.15 * self.rss_clean_end_mib)
        )


def candidates(
    count: int, salt: str, *, hostile: bool, honest: bool = True
) -> list[tuple[str, str]]:
    """``(kind, source)``: honest ones, and with ``hostile`` one in ten of
    the hostile kinds, in turn; without ``honest``, those hostile ones only."""
    kinds = list(HOSTILE)
    out = []
    for i in range(count):
        n = f"{salt}-{i}"
        if hostile and i % 10 == 5:
            kind = kinds[(i // 10) % len(kinds)]
            out.append((kind, hostile_candidate(kind, n)))
        elif honest:
            out.append(("honest", HONEST.format(n=n)))
    return out


def run_pass(
    client: CollimateClient, count: int, concurrency: int, *, hostile: bool, honest: bool = True
) -> Pass:
    cands = candidates(count, fresh_seed()[:8], hostile=hostile, honest=honest)
    report = Pass(grades=len(cands))
    lock = threading.Lock()

    def one(item: tuple[str, str]) -> None:
        kind, source = item
        try:
            r = grade(client, "py", source, SPEC, seed=fresh_seed(), timeout_seconds=TIMEOUT_S)
            reward, infra = r.reward, r.infra_error
            detail = str(r.detail)[:400]
        except CollimateError:
            reward, infra, detail = None, True, ""
        except Exception:  # an untyped failure is a finding
            with lock:
                report.untyped += 1
            return
        with lock:
            if kind == "honest":
                report.honest += 1
                report.honest_infra += infra
                report.honest_wrong += not infra and reward != 1.0
                if not infra and reward != 1.0 and len(report.honest_wrong_details) < 10:
                    report.honest_wrong_details.append(detail)
            else:
                report.hostile += 1
                report.hostile_infra += infra
                report.hostile_rewarded += not infra and bool(reward)

    start = time.monotonic()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, cands))
    report.seconds = time.monotonic() - start
    return report


def settle(client: CollimateClient) -> None:
    """Until the server is idle, and its closing clones are gone."""
    wait_quiet(client)
    time.sleep(0.5)


def clones(server: int) -> int:
    """The server's clones (its warm pool and any in use)."""
    count = 0
    for pid in descendants(server):
        try:
            with open(f"/proc/{pid}/comm") as fh:
                count += fh.read().strip() == "collimate-clone"
        except OSError:
            pass
    return count


def open_fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def own_client_pass(url: str, count: int, concurrency: int, **kind: bool) -> Pass:
    """:func:`run_pass` on a client of its own, closed at the pass's end. A
    pass keeps as many connections as it had requests at once, and a
    hostile one has more at once (re-packed and lone grades): left open,
    they would count as the server's fds at its end."""
    with CollimateClient(url, timeout=60) as client:
        return run_pass(client, count, concurrency, **kind)


def run_hostile_soak(grades: int, concurrency: int) -> HostileSoakReport:
    report = HostileSoakReport(concurrency=concurrency)
    server, url = serve_process()
    seen: dict[int, int] = {}
    try:
        # (the observer's one connection stays open throughout: in every count alike)
        with CollimateClient(url, timeout=60) as client:
            own_client_pass(url, min(200, grades), concurrency, hostile=False)  # warm-up
            report.clean = own_client_pass(url, grades, concurrency, hostile=False)
            settle(client)
            report.processes_clean_end = len(descendants(server.pid))
            report.clones_clean_end = clones(server.pid)
            report.fds_clean_end = open_fds(server.pid)
            report.rss_clean_end_mib = rss_mib(server.pid)
            report.mixed = own_client_pass(url, grades, concurrency, hostile=True)
            settle(client)
            seen.update(descendants(server.pid))
            report.processes_end = len(descendants(server.pid))
            report.clones_end = clones(server.pid)
            report.fds_end = open_fds(server.pid)
            report.rss_end_mib = rss_mib(server.pid)
            report.hostile_alone = own_client_pass(
                url, grades, concurrency, hostile=True, honest=False
            )
            settle(client)
    finally:
        stop_process(server)
    time.sleep(0.5)
    report.processes_leaked = still_alive(seen)
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--grades", type=int, default=10_000)
    p.add_argument("--concurrency", type=int, default=64)
    args = p.parse_args(argv)
    r = run_hostile_soak(args.grades, args.concurrency)
    for name, value in vars(r).items():
        print(f"{name:22} {value}")
    print(f"{'slowdown':22} {r.slowdown:.2f}x raw, {r.slowdown_beyond_own:.2f}x of the parts apart")
    print(f"{'flat':22} {r.flat}")
    bad = (
        r.mixed.honest_wrong
        + r.mixed.honest_infra
        + r.mixed.hostile_rewarded
        + r.mixed.untyped
        + r.hostile_alone.hostile_rewarded
        + r.processes_leaked
    )
    return 1 if bad or r.slowdown_beyond_own > 2.0 or not r.flat else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
