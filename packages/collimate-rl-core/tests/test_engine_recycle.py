"""Released clones are wiped and reused: the next user of a clone finds
nothing of the last one (files, processes, sockets, System V ipc, uid), and
a clone that cannot be wiped (an app server's, a full pool's, process mode's)
is closed instead."""

from __future__ import annotations

import functools

import pytest

from collimate_rl.local_backend.engine import ExecJob, ForkEngine, TemplateSpec
from collimate_rl.local_backend.engine.fork_clone import ForkClone
from collimate_rl.testing.engine import run_with_engine
from collimate_rl.testing.procs import start_time

pytestmark = pytest.mark.namespaces

PY = TemplateSpec(id="py", kind="python")
SH = TemplateSpec(id="sh", kind="shell")
SEED = "cd" * 32
# no pre-forked clones: the only clone in a pool is the one released to it
run = functools.partial(run_with_engine, "namespaces", pool_size=0)

# leaves something behind in every place a user could: files in the private
# root, /tmp and /dev/shm, a System V segment, a listening socket (TCP and
# abstract unix), and a detached process that outlives the exec
LEAVE_BEHIND = r"""
ipcmk -M 4096 >/dev/null
mkdir -p /task && echo secret > /task/left && echo secret > /tmp/left
echo secret > /dev/shm/left
python3 -c "
import os, socket, time
t = socket.socket(); t.bind(('127.0.0.1', 47011)); t.listen()
u = socket.socket(socket.AF_UNIX); u.bind('\0collimate-recycle'); u.listen()
print('listening', flush=True)
time.sleep(300)
" > /dev/null 2>&1 &
sleep 0.3
id -u
"""

LOOK_AROUND = r"""
id -u
ls /task /tmp /dev/shm 2>&1 | grep -c left || true
ipcs -m | grep -c '^0x' || true
ps -e -o comm= | grep -v -e '^ps$' -e '^sh$' -e '^grep$' -e '^sort$' | sort | tr '\n' ' '; echo
python3 -c "
import socket
for fam, addr in ((socket.AF_INET, ('127.0.0.1', 47011)), (socket.AF_UNIX, '\0collimate-recycle')):
    s = socket.socket(fam); s.settimeout(2)
    try:
        s.connect(addr); print('REACHED')
    except OSError:
        print('gone')
"
"""


async def _run(clone: ForkClone, source: str, timeout: float = 20.0) -> tuple[int, str]:
    out = await clone.run(ExecJob("command", source, SEED, timeout))
    return out.exit_code, out.output.decode()


def test_a_released_clone_is_reused_and_carries_nothing_over() -> None:
    async def body(engine: ForkEngine) -> None:
        engine.keep_idle = 1
        first = await engine.open_clone(SH, egress=None)
        code, out = await _run(first, LEAVE_BEHIND)
        assert code == 0, out
        old_uid, old_id, pid = int(out.split()[-1]), first.clone_id, first.pid
        await first.release()
        again = await engine.open_clone(SH, egress=None)
        assert again is first and again.pid == pid and again.generation == 1  # reused
        assert again.clone_id != old_id and again.uid != old_uid
        code, out = await _run(again, LOOK_AROUND)
        assert code == 0, out
        uid, files, segments, procs, tcp, unix = out.splitlines()
        assert int(uid) == again.uid and int(uid) != old_uid
        assert (files, segments) == ("0", "0"), out
        assert "python3" not in procs and "sleep" not in procs, procs
        assert (tcp, unix) == ("gone", "gone")
        await again.close()

    run([SH], body)


def test_a_reused_python_clone_starts_every_exec_fresh() -> None:
    async def body(engine: ForkEngine) -> None:
        engine.keep_idle = 1
        clone = await engine.open_clone(PY, egress=None)
        out = await clone.run(ExecJob("code", "import sys; sys.modules['json'] = 1", SEED, 20.0))
        assert out.exit_code == 0
        await clone.release()
        again = await engine.open_clone(PY, egress=None)
        assert again is clone
        out = await again.run(
            ExecJob("code", "import json, os; print(json.dumps([os.getuid()]))", SEED, 20.0)
        )
        assert out.exit_code == 0 and out.output.decode() == f"[{again.uid}]\n"
        await again.close()

    run([PY], body)


def test_a_clone_whose_exec_timed_out_is_wiped_and_reused() -> None:
    async def body(engine: ForkEngine) -> None:
        engine.keep_idle = 4
        clone = await engine.open_clone(SH, egress=None)
        out = await _run(clone, "sleep 300 & sleep 300 & while :; do :; done", timeout=0.5)
        assert out[0] == -1
        await clone.release()
        again = await engine.open_clone(SH, egress=None)
        assert again is clone and again.generation == 1
        # (by command line: a pipeline's shell is briefly "sh" too, before it execs grep)
        code, procs = await _run(
            again, "ps -e -o args= | grep -c -e '[s]leep 300' -e '[w]hile :'; :"
        )
        assert code == 0 and procs.strip() == "0", procs  # none of the timed-out exec's tree
        await again.close()

    run([SH], body)


def test_a_full_pool_closes_what_it_cannot_keep() -> None:
    async def body(engine: ForkEngine) -> None:
        engine.keep_idle = 1
        clones = [await engine.open_clone(SH, egress=None) for _ in range(3)]
        # (a pid is the same process only with the same start: under load a
        # closed clone's pid is soon another process's, pid_max being 32768)
        started = {c.pid: start_time(c.pid) for c in clones}
        for clone in clones:
            await clone.release()
        kept = [c for c in clones if not c.closed]
        assert len(kept) <= 1 and len(clones) - len(kept) >= 2
        for clone in clones:
            await clone.close()
        for pid, start in started.items():  # every process of a closed clone is gone
            assert start_time(pid) != start or _is_zombie(pid)
        for clone in clones:
            assert clone.closed

    run([SH], body)


def test_process_mode_never_reuses_a_clone() -> None:
    async def body(engine: ForkEngine) -> None:
        clone = await engine.open_clone(SH, egress=None)
        assert not clone.recyclable
        await clone.release()
        assert clone.closed

    run_with_engine("process", [SH], body)



def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True
