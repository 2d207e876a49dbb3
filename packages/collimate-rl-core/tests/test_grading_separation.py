"""The candidates' confinement (``guest/separation.py``) on its
own, in real processes of this machine: what a confined process can still
do to itself and cannot do to the process that confined it, and the reason
given where it cannot be done. (End to end, through packs of a real
backend: ``test_grading_pack_hostile.py``.)

Each case runs in a fresh interpreter: confining is for good.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

GUEST = Path(__file__).resolve().parents[1] / "src" / "collimate_rl" / "guest"

SPAWNER_AND_CANDIDATE = """
import errno, json, os, resource, signal, sys
sys.path.insert(0, sys.argv[1])
import separation
confine, why = separation._w_separator()
if confine is None:
    print(json.dumps({"why": why})); sys.exit(0)
spawner = os.getpid()
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    ok = confine()
    out = {"confined": ok}
    def outcome(call):
        try:
            call()
        except OSError as exc:
            return errno.errorcode.get(exc.errno, str(exc.errno))
        return "done"
    out["signal the spawner"] = outcome(lambda: os.kill(spawner, 0))
    out["stop the spawner"] = outcome(lambda: os.kill(spawner, signal.SIGSTOP))
    out["read the spawner's memory"] = outcome(lambda: open("/proc/%d/mem" % spawner, "rb"))
    out["limit the spawner"] = outcome(
        lambda: resource.prlimit(spawner, resource.RLIMIT_NOFILE, (8, 8)))
    out["renice the spawner"] = outcome(lambda: os.setpriority(os.PRIO_PROCESS, spawner, 19))
    out["renice the whole uid"] = outcome(lambda: os.setpriority(os.PRIO_USER, 0, 19))
    out["move the spawner"] = outcome(lambda: os.sched_setaffinity(spawner, {0}))
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)
    out["limit itself"] = outcome(lambda: resource.prlimit(0, resource.RLIMIT_NOFILE, nofile))
    out["renice itself"] = outcome(lambda: os.setpriority(os.PRIO_PROCESS, 0, 1))
    out["move itself"] = outcome(lambda: os.sched_setaffinity(0, os.sched_getaffinity(0)))
    out["signal itself"] = outcome(lambda: os.kill(os.getpid(), 0))
    child = os.fork()
    if child == 0:
        os._exit(0)
    out["fork and reap"] = outcome(lambda: os.waitpid(child, 0))
    out["oom_score_adj"] = open("/proc/self/oom_score_adj").read().strip()
    os.write(w, json.dumps(out).encode())
    os._exit(0)
os.close(w)
os.waitpid(pid, 0)
print(os.read(r, 1 << 16).decode())
"""


def run(script: str, *args: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", script, str(GUEST), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def landlock_abi() -> int:
    import ctypes

    return int(ctypes.CDLL(None, use_errno=True).syscall(444, None, 0, 1))


needs_landlock = pytest.mark.skipif(
    landlock_abi() < 6, reason="this kernel's Landlock cannot scope signals (Linux 6.12)"
)


@needs_landlock
def test_a_confined_process_keeps_to_itself() -> None:
    seen = run(SPAWNER_AND_CANDIDATE)
    assert seen == {
        "confined": True,
        "signal the spawner": "EPERM",
        "stop the spawner": "EPERM",
        "read the spawner's memory": "EACCES",
        "limit the spawner": "EPERM",
        "renice the spawner": "EPERM",
        "renice the whole uid": "EPERM",
        "move the spawner": "EPERM",
        "limit itself": "done",
        "renice itself": "done",
        "move itself": "done",
        "signal itself": "done",
        "fork and reap": "done",
        "oom_score_adj": "1000",
    }


def test_where_candidates_cannot_be_kept_apart_it_says_why() -> None:
    script = (
        "import json, sys\nsys.path.insert(0, sys.argv[1])\nimport separation\n"
        "separation._W_LANDLOCK_MIN_ABI = 99\n"
        "print(json.dumps(separation._w_separator()[1]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(GUEST)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    why = json.loads(done.stdout)
    assert "Landlock" in why and "cannot scope signals" in why
