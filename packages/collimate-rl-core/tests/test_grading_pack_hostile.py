"""A hostile candidate costs only itself: one hostile and seven correct
candidates, graded with the default call (``grade_batch``, ``pack="auto"``)
on a one-slot node, so all eight share one exec. Whatever the hostile one
does (stop or slow the grader, the spawner or its siblings; hog CPU with
threads and children; exhaust the clone's processes, memory or disk;
print forever; never return), it scores 0.0, every sibling 1.0, nothing is
an infrastructure error, the group is done within its own time plus the
hostile candidate's timeout plus slack, and a fresh group right after
grades 8/8. Then, from inside the sandbox: a candidate cannot signal, stop
or read a sibling, the spawner or the grader.

(The bound checked here is a loose one, for a noisy shared machine: the
figures are in ``benchmarks/``.)
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from collimate_rl import CollimateClient, grade_batch, reward_spec_from_ground_truth
from collimate_rl.local_backend import LocalCollimateBackend

pytestmark = pytest.mark.namespaces

SPEC = reward_spec_from_ground_truth(
    [{"input": [i], "output": i * i} for i in range(3)], "solve"
)
RIGHT = "def solve(i):\n    return i * i\n"
#: the hostile candidate's budget (``timeout_seconds``)
TIMEOUT_S = 3
#: what a hostile candidate may add beyond its own timeout: the kill and
#: sweep of what it left, on a shared CI machine (generous on purpose)
SLACK_S = 8.0


def hostile(body: str) -> str:
    """A candidate whose ``solve`` does ``body`` (then answers wrongly)."""
    lines = "\n".join("    " + line for line in body.strip().splitlines())
    return f"import os, signal, sys, time, threading\ndef solve(i):\n{lines}\n    return -1\n"


HOSTILE: dict[str, str] = {
    "stops_the_spawner": "os.kill(os.getppid(), signal.SIGSTOP)",
    "stops_the_grader": (
        "ppid = int(open('/proc/%d/stat' % os.getppid()).read().rsplit(')', 1)[1].split()[1])\n"
        "os.kill(ppid, signal.SIGSTOP)"
    ),
    "stops_everything_it_can": "os.kill(-1, signal.SIGSTOP)",
    "kills_everything_it_can": "os.kill(-1, signal.SIGKILL)",
    "slows_the_grader": (
        "ppid = int(open('/proc/%d/stat' % os.getppid()).read().rsplit(')', 1)[1].split()[1])\n"
        "for pid in (os.getppid(), ppid):\n"
        "    for attempt in (\n"
        "        lambda: os.setpriority(os.PRIO_PROCESS, pid, 19),\n"
        "        lambda: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0)),\n"
        "        lambda: os.sched_setaffinity(pid, {0}),\n"
        "        lambda: os.setpriority(os.PRIO_USER, 0, 19),\n"
        "    ):\n"
        "        try:\n            attempt()\n        except OSError:\n            pass\n"
        "time.sleep(30)"
    ),
    "limits_the_grader": (
        "import resource\n"
        "ppid = int(open('/proc/%d/stat' % os.getppid()).read().rsplit(')', 1)[1].split()[1])\n"
        "for pid in (os.getppid(), ppid):\n"
        "    for res in (resource.RLIMIT_CPU, resource.RLIMIT_NOFILE, resource.RLIMIT_AS):\n"
        "        try:\n            resource.prlimit(pid, res, (1, 1))\n"
        "        except OSError:\n            pass"
    ),
    "hogs_the_cpu_with_threads_and_children": (
        "for _ in range(4):\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        while True:\n            pass\n"
        "for _ in range(4):\n"
        "    threading.Thread(target=lambda: [None for _ in iter(int, 1)], daemon=True).start()\n"
        "while True:\n    pass"
    ),
    "leaves_children_that_outlive_it": (
        "if os.fork() == 0:\n"
        "    if os.fork() == 0:\n"
        "        while True:\n"
        "            try:\n                os.kill(-1, signal.SIGSTOP)\n"
        "            except OSError:\n                pass\n"
        "            time.sleep(0.01)\n"
        "    os._exit(0)"
    ),
    "exhausts_processes": (
        "while True:\n"
        "    try:\n        os.fork()\n"
        "    except OSError:\n        time.sleep(0.01)"
    ),
    "exhausts_memory": (
        "hoard = []\n"
        "for _ in range(3):\n"
        "    os.fork()\n"
        "while True:\n"
        "    try:\n        hoard.append(bytearray(64 << 20))\n"
        "    except MemoryError:\n        time.sleep(0.01)"
    ),
    "exhausts_the_disk": (
        "n = 0\n"
        "for where in ('/tmp', '/dev/shm', '.'):\n"
        "    for _ in range(64):\n"
        "        try:\n"
        "            with open('%s/fill-%d' % (where, n), 'wb') as fh:\n"
        "                fh.write(b'x' * (16 << 20))\n"
        "        except OSError:\n            break\n"
        "        n += 1"
    ),
    "prints_forever": (
        "line = b'x' * 65536\n"
        "while True:\n"
        "    for fd in (1, 2):\n"
        "        try:\n            os.write(fd, line)\n"
        "        except OSError:\n            pass\n"
        "    print('y' * 1000)"
    ),
    "never_returns": "while True:\n    time.sleep(1)",
}


@pytest.fixture(scope="module")
def client() -> Iterator[CollimateClient]:
    # one exec at a time: pack="auto" puts a group of 8 in one pack
    with LocalCollimateBackend(run_slots=1) as backend, CollimateClient(backend.base_url) as c:
        yield c


def grade_group(client: CollimateClient, candidates: list[str]) -> tuple[list, float]:
    start = time.monotonic()
    results = grade_batch(client, "py", candidates, SPEC, timeout_seconds=TIMEOUT_S)
    return results, time.monotonic() - start


@pytest.mark.parametrize("behaviour", list(HOSTILE))
def test_a_hostile_candidate_costs_only_itself(client: CollimateClient, behaviour: str) -> None:
    _, clean_s = grade_group(client, [RIGHT] * 8)
    candidates = [RIGHT] * 3 + [hostile(HOSTILE[behaviour])] + [RIGHT] * 4
    results, took_s = grade_group(client, candidates)
    assert [r.reward for r in results] == [1.0] * 3 + [0.0] + [1.0] * 4, [
        r.detail for r in results
    ]
    assert not any(r.infra_error for r in results), [r.error for r in results]
    nonce = results[3].raw["pack"]["nonce"]  # the hostile one shared its siblings' exec
    assert sum(r.raw["pack"]["nonce"] == nonce for r in results) >= 4
    assert took_s <= clean_s + TIMEOUT_S + SLACK_S, (took_s, clean_s)
    again, _ = grade_group(client, [RIGHT] * 8)
    assert [r.reward for r in again] == [1.0] * 8


# -- from inside: what a candidate can do to the processes around it --------

PROBE = '''
import os, signal, errno, resource

def _parent_of(pid):
    return int(open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[1])

def _outcome(call):
    try:
        call()
    except PermissionError:
        return "refused"
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
    return "done"

def _read(path):
    with open(path, "rb") as fh:
        return fh.read(64)

def solve(i):
    spawner = os.getppid()
    grader = _parent_of(spawner)
    out = {}
    for name, pid in (("spawner", spawner), ("grader", grader)):
        out[name + " signal 0"] = _outcome(lambda: os.kill(pid, 0))
        out[name + " stop"] = _outcome(lambda: os.kill(pid, signal.SIGSTOP))
        out[name + " environ"] = _outcome(lambda: _read("/proc/%d/environ" % pid))
        out[name + " mem"] = _outcome(lambda: _read("/proc/%d/mem" % pid))
        out[name + " prlimit"] = _outcome(
            lambda: resource.prlimit(pid, resource.RLIMIT_NOFILE, (8, 8)))
        out[name + " nice"] = _outcome(lambda: os.setpriority(os.PRIO_PROCESS, pid, 19))
        out[name + " cpus"] = _outcome(lambda: os.sched_setaffinity(pid, {0}))
    others = [
        int(p) for p in os.listdir("/proc")
        if p.isdigit() and int(p) not in (1, os.getpid(), spawner, grader)
    ]
    out["other processes"] = others
    out["left by a sibling"] = sorted(
        n for d in ("/tmp", "/dev/shm", ".") for n in os.listdir(d) if "sibling" in n
    )
    out["own signal"] = _outcome(lambda: os.kill(os.getpid(), 0))
    out["own nice"] = _outcome(lambda: os.setpriority(os.PRIO_PROCESS, 0, 1))
    return out
'''

SIBLING = """
import os, time
def solve(i):
    for where in ("/tmp", "/dev/shm", "."):
        with open(where + "/sibling-secret-%d" % i, "w") as fh:
            fh.write("SECRET")
    if os.fork() == 0:
        os.setsid()
        time.sleep(60)
        os._exit(0)
    return i * i
"""

KEPT_APART = {
    **{
        f"{who} {what}": "refused"
        for who in ("spawner", "grader")
        for what in ("signal 0", "stop", "environ", "mem", "prlimit", "nice", "cpus")
    },
    "other processes": [],
    "left by a sibling": [],
    "own signal": "done",
    "own nice": "done",
}


def test_from_inside_a_candidate_cannot_reach_a_sibling_the_spawner_or_the_grader(
    client: CollimateClient,
) -> None:
    """The probe runs after a sibling that left files and a process behind;
    it finds none of them, and every call on the spawner or the grader is
    refused (while the same calls on itself work)."""
    spec = reward_spec_from_ground_truth([{"input": [0], "output": KEPT_APART}], "solve")
    sibling_spec = reward_spec_from_ground_truth([{"input": [0], "output": 0}], "solve")
    results = grade_batch(
        client,
        "py",
        [SIBLING, PROBE, SIBLING, PROBE],
        [sibling_spec, spec, sibling_spec, spec],
        timeout_seconds=TIMEOUT_S,
    )
    assert len({r.raw["pack"]["nonce"] for r in results}) == 1
    assert [r.reward for r in results] == [1.0] * 4, [r.detail for r in results]
