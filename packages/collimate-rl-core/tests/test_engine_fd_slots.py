"""The fds an exec's code finds open (``guest/zygote/exec_child.py``'s slots), in
both isolation modes: 0-2, and at the top of the fd table the exec child's
own (the report pipes, the "twins wanted" byte, the twin's socket once one
is wanted), where the code's own files never land; nothing else of the
clone or the zygote. A shell command (``/bin/sh``) holds none of them."""

from __future__ import annotations

import functools
import json
import resource

import pytest

from collimate_rl.guest.zygote import exec_child
from collimate_rl.local_backend.engine import ExecJob, ForkEngine, TemplateSpec
from collimate_rl.testing.engine import run_with_engine

PY = TemplateSpec(id="py", kind="python")
SH = TemplateSpec(id="sh", kind="shell")
SEED = "ab" * 32
MODES = ["process", pytest.param("namespaces", marks=pytest.mark.namespaces)]

run = functools.partial(run_with_engine, pool_size=1)

# what the code finds: its open fds (but the one listing them) and what each is
LIST_FDS = """
import json, os
fds = {}
for name in os.listdir('/proc/self/fd'):
    try:
        fds[int(name)] = os.readlink('/proc/self/fd/' + name).split(':')[0]
    except OSError:
        pass  # (the listing's own fd, gone)
print(json.dumps({"fds": fds, "wanted": os.environ.get('COLLIMATE_CLEAN_TWIN_WANTED'),
                  "twin": os.environ.get('COLLIMATE_CLEAN_TWIN')}))
"""
# (the shell's own fds, by its own glob: no pipeline whose pipes it holds meanwhile)
LIST_FDS_SH = "cd /proc/$$/fd && echo *"
WANT = "import os\nos.pwrite(int(os.environ['COLLIMATE_CLEAN_TWIN_WANTED']), b'\\x01', 0)\n"


def job(source: str, kind: str = "code") -> ExecJob:
    return ExecJob(kind, source, SEED, 20.0, ())  # type: ignore[arg-type]


def top_slot() -> int:
    """Where the report pipe to the clone is: ``ACK_FD``, else just under
    the soft fd limit (the engine's processes inherit this one's)."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return max(4, min(exec_child.ACK_FD, soft - 1)) if soft > 0 else exec_child.ACK_FD


def seen(out_bytes: bytes) -> dict[str, object]:
    found: dict[str, object] = json.loads(out_bytes)
    fds = found["fds"]
    assert isinstance(fds, dict)
    found["fds"] = {int(k): v for k, v in fds.items() if int(k) > 2}
    return found


@pytest.mark.parametrize("mode", MODES)
def test_an_exec_holds_its_own_fds_at_the_top_and_nothing_else(mode: str) -> None:
    ack = top_slot()
    assert ack == 1000  # (the suite runs with the usual soft limit of 1024 or more)

    async def body(engine: ForkEngine) -> None:
        clone = await engine.open_clone(PY, egress=None)
        try:
            before = await clone.run(job(LIST_FDS))
            asked = await clone.run(job(WANT))
            after = await clone.run(job(LIST_FDS))
        finally:
            await clone.close()
        assert before.exit_code == 0 and asked.exit_code == 0 and after.exit_code == 0
        # the report pipe to the clone, the one to the engine under it, and
        # the zygote's "twins wanted" byte three under the top
        first = seen(before.output)
        assert first == {
            "fds": {ack: "pipe", ack - 1: "pipe", ack - 3: "/memfd"},
            "wanted": str(ack - 3),
            "twin": None,
        }, first
        # once an exec asked for twins: the twin's socket two under the top
        second = seen(after.output)
        twin = second.pop("twin")
        assert isinstance(twin, str) and twin.startswith(f"{ack - 2}:"), twin
        assert twin.partition(":")[2].isdigit()
        assert second == {
            "fds": {ack: "pipe", ack - 1: "pipe", ack - 2: "socket", ack - 3: "/memfd"},
            "wanted": str(ack - 3),
        }, second

    run(mode, [PY], body)


@pytest.mark.parametrize("mode", MODES)
def test_a_shell_command_holds_no_fd_of_the_exec_child(mode: str) -> None:
    """The report pipes close before ``/bin/sh`` replaces the exec child
    (the clone's relay reports its end), and a shell template has no
    twins flag."""

    async def body(engine: ForkEngine) -> None:
        clone = await engine.open_clone(SH, egress=None)
        try:
            out = await clone.run(job(LIST_FDS_SH, kind="command"))
        finally:
            await clone.close()
        assert out.exit_code == 0, out.output
        # 0-2, and at most the directory the glob reads (3)
        fds = sorted(int(fd) for fd in out.output.split())
        assert fds[:3] == [0, 1, 2] and fds[3:] in ([], [3]), out.output

    run(mode, [SH], body)
