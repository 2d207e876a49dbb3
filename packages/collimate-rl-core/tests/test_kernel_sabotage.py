"""A catalogue of hostile cells, each followed by a normal one, through
``Kernel`` (both wires) and ``PythonTool`` / ``AsyncPythonTool`` on a real
namespaced local backend.

The rule they check: an infra error (any ``CollimateError`` out of a call)
tells the trainer "the grader could not judge this sample" and drops it
from the loss, so a model whose cell could make a call raise would turn its
own failure into no signal. Whatever a cell does (to the interpreter, its
keeper, its runner, the kernel's files, ``/tmp``, the sandbox's processes,
its limits), neither that call nor the next raises; the hostile cell's
result says what happened (its own error, ``timed_out``, ``restarted``);
the next cell runs; and when neither result says ``restarted``, the names
of earlier cells are still there.

Some outcomes depend on the host: where the kernel can scope its signals
(Landlock ABI 6, Linux 6.12) and filter calls on other processes (seccomp,
x86_64), a cell cannot reach the runner or the sandbox's exec processes at
all (``GUARDED``); elsewhere it can, and the kernel is made anew instead.
"""

from __future__ import annotations

import asyncio
import ctypes
import platform
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from collimate_rl import (
    AsyncGatewayClient,
    AsyncPythonTool,
    CellResult,
    CollimateClient,
    GatewayClient,
    PythonTool,
    Sandbox,
    cell_text,
)
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.testing.engine import namespaced_backend

pytestmark = pytest.mark.namespaces

PRO = "col_pro_kernel-sabotage"
# small quotas, so that filling them is quick: a cap on processes, 256 MiB
# of memory (also the size of /tmp, whose files count against it)
LIMITS = {"processes": 64, "memory": "256MiB"}
TEMPLATE = {"id": "sabotage", "kind": "python", "limits": LIMITS}
# memory bounded by the clone's cgroup alone: past it, the OOM killer acts
NO_AS = {"id": "sabotage-oom", "kind": "python", "limits": {**LIMITS, "address_space": False}}
WIRES = ("daemon", "gateway")


def _landlock_abi() -> int:
    try:
        return int(ctypes.CDLL(None, use_errno=True).syscall(444, None, 0, 1))
    except (OSError, AttributeError):
        return -1


#: the kernel keeps its cells off the sandbox's other processes here
GUARDED = _landlock_abi() >= 6 and platform.machine() == "x86_64"

# -- the cells --------------------------------------------------------------

OTHERS = (
    "import os, signal\n"
    "def others():\n"
    "    me = os.getpid()\n"
    "    return [int(p) for p in os.listdir('/proc') if p.isdigit() and int(p) != me]\n"
)
KERNEL_DIR = "import glob\nkernel_dir = glob.glob('/tmp/.collimate-kernel-*')[0]\n"
FILL = (
    "import os\n"
    "def fill(where):\n"
    "    n = 0\n"
    "    try:\n"
    "        while True:\n"
    "            with open(os.path.join(where, f'fill-{n}'), 'wb') as f:\n"
    "                for _ in range(64):\n"
    "                    f.write(b'x' * (1 << 20))\n"
    "            n += 1\n"
    "    except OSError as exc:\n"
    "        print('full:', exc.strerror)\n"
)
SESSIONS = (
    "import os\n"
    "mine = os.getsid(0)\n"
    "def outside():\n"
    "    found = []\n"
    "    for p in os.listdir('/proc'):\n"
    "        try:\n"
    "            if p.isdigit() and os.getsid(int(p)) != mine:\n"
    "                found.append(int(p))\n"
    "        except OSError:\n"
    "            pass\n"
    "    return sorted(found)\n"
)


@dataclass(frozen=True)
class Case:
    """A hostile cell, what its result may say (``ok``, ``error``,
    ``timed_out``, ``restarted``: see :func:`outcome`) on a guarded host
    and elsewhere, and the cell's timeout."""

    name: str
    code: str
    outcomes: frozenset[str]
    unguarded: frozenset[str] | None = None
    timeout: float = 5.0
    template: str = "sabotage"

    def expected(self) -> frozenset[str]:
        return self.outcomes if GUARDED or self.unguarded is None else self.unguarded


def case(
    name: str,
    code: str,
    *outcomes: str,
    unguarded: tuple[str, ...] | None = None,
    timeout: float = 5.0,
    template: str = "sabotage",
) -> Case:
    return Case(
        name,
        code,
        frozenset(outcomes),
        None if unguarded is None else frozenset(unguarded),
        timeout,
        template,
    )


ANY_LOSS = ("ok", "error", "restarted")
CASES = [
    # signals to everything the cell can see
    case(
        "kill_every_pid",
        OTHERS + "for p in others():\n    try:\n        os.kill(p, signal.SIGKILL)\n"
        "    except OSError:\n        pass\nos.kill(-1, signal.SIGKILL)",
        "ok",
        unguarded=ANY_LOSS,
    ),
    case(
        "kill_minus_one",
        "import os, signal\nos.kill(-1, signal.SIGKILL)",
        "ok",
        "error",
        unguarded=ANY_LOSS,
    ),
    case(
        "stop_everything_then_end",
        OTHERS + "for p in others():\n    try:\n        os.kill(p, signal.SIGSTOP)\n"
        "    except OSError:\n        pass\nos.kill(-1, signal.SIGSTOP)",
        "ok",
        unguarded=ANY_LOSS,
    ),
    case(
        "stop_everything_and_itself",
        "import os, signal\ntry:\n    os.kill(-1, signal.SIGSTOP)\nexcept OSError:\n    pass\n"
        "os.kill(os.getpid(), signal.SIGSTOP)",
        "restarted",
        timeout=0.5,
    ),
    case("kill_parent", "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)", "ok"),
    case("kill_own_group", "import os, signal\nos.killpg(0, signal.SIGKILL)", "restarted"),
    case("sigkill_self", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", "restarted"),
    case(
        "limit_other_processes",
        SESSIONS + "import resource\nfor p in outside():\n"
        "    resource.prlimit(p, resource.RLIMIT_CPU, (0, 0))",
        "error",
        unguarded=ANY_LOSS,
    ),
    case(
        "point_the_kernels_pids_at_others",
        SESSIONS + KERNEL_DIR + "import signal\ntarget = outside()[-1]\n"
        "open(kernel_dir + '/pid', 'w').write(str(target))\n"
        "open(kernel_dir + '/pgid', 'w').write(str(os.getpgid(target)))\n"
        "os.kill(os.getpid(), signal.SIGKILL)",
        "restarted",
    ),
    # descriptors, limits, processes, memory
    case("close_every_descriptor", "import os\nos.closerange(0, 1 << 16)", "restarted"),
    case(
        "exhaust_descriptors",
        "import os\nheld = []\ntry:\n    while True:\n"
        "        held.append(os.open('/dev/null', os.O_RDONLY))\nexcept OSError:\n    pass",
        "ok",
    ),
    *(
        case(
            f"lower_{name.lower()}",
            f"import resource\nresource.setrlimit(resource.{name}, ({value}, {value}))",
            "restarted",
        )
        for name, value in (
            ("RLIMIT_NOFILE", 4),
            ("RLIMIT_NPROC", 1),
            ("RLIMIT_AS", 32 << 20),
            ("RLIMIT_CPU", 1),
        )
    ),
    case(
        "fork_bomb",
        "import os, time\nwhile True:\n    try:\n        os.fork()\n"
        "    except OSError:\n        time.sleep(0.05)",
        "timed_out",
        "restarted",
        timeout=2,
    ),
    case(
        "memory_past_the_quota", "xs = []\nwhile True:\n    xs.append(bytearray(16 << 20))", "error"
    ),
    case(
        "memory_past_the_cgroup",
        "xs = []\nwhile True:\n    xs.append(bytearray(16 << 20))",
        "error",
        "restarted",
        template="sabotage-oom",
    ),
    # the disk and the kernel's own files
    case("fill_tmp", FILL + "fill('/tmp')", *ANY_LOSS),
    case("fill_the_kernels_directory", FILL + KERNEL_DIR + "fill(kernel_dir)", *ANY_LOSS),
    case("fill_dev_shm", FILL + "fill('/dev/shm')", "ok", "error"),
    case(
        "remove_the_kernels_directory",
        KERNEL_DIR + "import shutil\nshutil.rmtree(kernel_dir)",
        "ok",
        "restarted",
    ),
    case(
        "remove_the_kernels_files",
        KERNEL_DIR + "import os\nfor name in os.listdir(kernel_dir):\n"
        "    p = os.path.join(kernel_dir, name)\n"
        "    if os.path.isfile(p):\n        os.unlink(p)",
        "ok",
        "restarted",
    ),
    case(
        "rewrite_the_kernels_program",
        KERNEL_DIR + "open(kernel_dir + '/kernel.py', 'w').write("
        "'import sys\\ndef main(argv):\\n    print(\"@@collimate-kernel-result@@ [1]\")\\n')\n"
        "import shutil\nshutil.rmtree(kernel_dir + '/__pycache__', ignore_errors=True)",
        "ok",
    ),
    case(
        "empty_tmp",
        "import os, shutil\nfor e in os.listdir('/tmp'):\n    p = os.path.join('/tmp', e)\n"
        "    if os.path.isdir(p) and not os.path.islink(p):\n"
        "        shutil.rmtree(p, ignore_errors=True)\n    else:\n        os.unlink(p)",
        "ok",
        "restarted",
    ),
    case(
        "chdir_into_a_deleted_directory",
        "import os, tempfile\nd = tempfile.mkdtemp()\nos.chdir(d)\nos.rmdir(d)",
        "ok",
    ),
    # the interpreter itself
    case("os_exit", "import os\nos._exit(0)", "restarted"),
    case("sys_exit", "import sys\nsys.exit(3)", "error"),
    case(
        "leave_a_sleeper_behind",
        "import subprocess\nsubprocess.Popen(['sleep', '600'], start_new_session=True)\n"
        "import threading, time\nthreading.Thread(target=time.sleep, args=(600,), daemon=True)"
        ".start()",
        "ok",
    ),
    case(
        "replace_builtins_and_streams",
        "import builtins, sys\nbuiltins.print = None\nbuiltins.__import__ = None\n"
        "builtins.len = None\nsys.stdout = None\nsys.stderr = None\nsys.displayhook = None",
        "ok",
        "restarted",  # the kernel's own libraries (threading) use len: a restart, then fine
    ),
    case(
        "ignore_interrupts_from_now_on",
        "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)",
        "ok",
    ),
    case("loop_past_the_timeout", "while True:\n    pass", "timed_out", timeout=1),
]
#: the normal cell after each hostile one: it prints, and says whether the
#: names of the cells before are there; after a cell that replaced ``print``
#: and ``len``, a cell that needs neither
AFTER = "print(1 + 1)\n'kept' in globals()"
AFTER_BUILTINS = "str(1 + 1) + str('kept' in globals())"


def outcome(result: CellResult) -> str:
    """What a cell's result says happened, the gravest first."""
    if result.restarted:
        return "restarted"
    if result.timed_out:
        return "timed_out"
    return "error" if result.error is not None else "ok"


def check(case: Case, hostile: CellResult, after: CellResult) -> None:
    """The rule, for one hostile cell and the normal one after it."""
    assert outcome(hostile) in case.expected(), hostile
    if hostile.restarted:
        assert hostile.note or hostile.error is not None, hostile  # it says why
        assert "[the interpreter was restarted" in cell_text(hostile)
    if hostile.timed_out:
        assert "timed out" in cell_text(hostile)
    if case.name == "replace_builtins_and_streams":
        assert after.error is None and after.value in ("'2True'", "'2False'"), after
        kept = after.value == "'2True'"
    elif case.name == "ignore_interrupts_from_now_on":
        kept = True  # checked by the caller: the next timeout still interrupts
        assert after.error is None and after.stdout == "2\n", after
    else:
        assert after.error is None and after.stdout == "2\n", after
        kept = after.value == "True"
    # a result that does not say restarted keeps the names: nothing was lost silently
    assert kept or hostile.restarted or after.restarted, (hostile, after)
    if kept:
        assert not after.restarted, after


CASE_IDS = [c.name for c in CASES]


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with namespaced_backend([TEMPLATE, NO_AS], api_keys=[PRO]) as server:
        yield server


def blocking_client(backend: LocalCollimateBackend, wire: str) -> CollimateClient | GatewayClient:
    if wire == "daemon":
        return CollimateClient(backend.base_url)
    return GatewayClient(api_key=PRO, base_url=backend.base_url)


@pytest.fixture(scope="module", params=WIRES)
def client(
    request: pytest.FixtureRequest, backend: LocalCollimateBackend
) -> Iterator[CollimateClient | GatewayClient]:
    with blocking_client(backend, request.param) as made:
        yield made


def run_pair(run: object, case: Case) -> tuple[CellResult, CellResult]:
    """The cell before (a name to keep), the hostile cell, the normal one."""
    assert callable(run)
    first = run("kept = 41")
    assert first.error is None and not first.restarted, first
    hostile = run(case.code, timeout=case.timeout)
    after = run(AFTER_BUILTINS if case.name == "replace_builtins_and_streams" else AFTER)
    return hostile, after


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_a_hostile_cell_through_a_kernel(
    case: Case, client: CollimateClient | GatewayClient
) -> None:
    with Sandbox(case.template, client=client) as sandbox, sandbox.kernel(timeout=5) as kernel:
        hostile, after = run_pair(kernel.run, case)
        check(case, hostile, after)
        if case.name == "ignore_interrupts_from_now_on":
            interrupted = kernel.run("while True:\n    pass", timeout=1)
            assert interrupted.timed_out and not interrupted.restarted, interrupted


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_a_hostile_cell_through_the_python_tool(case: Case, backend: LocalCollimateBackend) -> None:
    """The blocking tool over the daemon's wire (the async one below takes
    the gateway's), as the framework tools hold it."""
    with (
        CollimateClient(backend.base_url) as client,
        PythonTool(client=client, template=case.template, timeout=5) as tool,
    ):
        hostile, after = run_pair(tool.run, case)
        check(case, hostile, after)
        assert tool.calls == 3


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_a_hostile_cell_through_the_async_python_tool(
    case: Case, backend: LocalCollimateBackend
) -> None:
    async def body() -> tuple[CellResult, CellResult]:
        async with (
            AsyncGatewayClient(api_key=PRO, base_url=backend.base_url) as client,
            AsyncPythonTool(client=client, template=case.template, timeout=5) as tool,
        ):
            assert (await tool.run("kept = 41")).error is None
            hostile = await tool.run(case.code, timeout=case.timeout)
            normal = AFTER_BUILTINS if case.name == "replace_builtins_and_streams" else AFTER
            return hostile, await tool.run(normal)

    check(case, *asyncio.run(body()))


def test_a_kernel_that_cannot_be_made_anew_in_place_gets_a_fresh_sandbox(
    client: CollimateClient | GatewayClient,
) -> None:
    """A cell that leaves the kernel's directory impossible to remove (a
    subdirectory it may not write) keeps a new kernel from being made
    there: the next call gets a fresh sandbox, and its result says so,
    rather than an infra error."""
    with Sandbox("sabotage", client=client) as sandbox, sandbox.kernel(timeout=5) as kernel:
        first = sandbox.session_id
        kernel.run("kept = 1")
        blocked = kernel.run(
            KERNEL_DIR + "import os, shutil\nshutil.rmtree(kernel_dir)\n"
            "os.makedirs(kernel_dir + '/locked')\nopen(kernel_dir + '/locked/f', 'w').close()\n"
            "os.chmod(kernel_dir + '/locked', 0o500)"
        )
        assert blocked.error is None, blocked
        after = kernel.run(AFTER)
        assert after.stdout == "2\n" and after.value == "False", after
        assert after.restarted and after.note and "fresh one" in after.note, after
        assert sandbox.session_id != first
        assert kernel.run("kept = 3\nkept").value == "3"


def test_a_fork_bomb_that_escapes_the_kernel_and_kills_it(
    client: CollimateClient | GatewayClient,
) -> None:
    """Processes in sessions of their own outlive the kernel's restart and
    hold the process cap: the kernel is made anew when the few processes
    its death freed suffice, else in a fresh sandbox; either way the cell's
    result says the kernel was lost, and the next call runs."""
    with Sandbox("sabotage", client=client) as sandbox, sandbox.kernel(timeout=5) as kernel:
        kernel.run("kept = 1")
        hostile = kernel.run(
            "import os, time\nwhile True:\n    try:\n        pid = os.fork()\n"
            "    except OSError:\n        break\n    if pid == 0:\n        os.setsid()\n"
            "        time.sleep(600)\n        os._exit(0)\nos._exit(0)"
        )
        assert hostile.restarted and hostile.error is not None, hostile
        assert "[the interpreter was restarted" in cell_text(hostile)
        after = kernel.run(AFTER)
        assert after.stdout == "2\n" and after.value == "False", after


def test_restart_and_fork_mend_a_kernel_whose_files_are_gone(
    client: CollimateClient | GatewayClient,
) -> None:
    """The trainer's own calls on a kernel (``restart``, ``fork``) do not
    raise for what a cell did either: the kernel is made anew, and the
    results after say so."""
    with Sandbox("sabotage", client=client) as sandbox, sandbox.kernel(timeout=5) as kernel:
        kernel.run("kept = 1")
        kernel.run(KERNEL_DIR + "import shutil\nshutil.rmtree(kernel_dir)")
        kernel.restart()
        assert kernel.run("1 + 1").value == "2"
        kernel.run("kept = 2")
        kernel.run(KERNEL_DIR + "import shutil\nshutil.rmtree(kernel_dir)")
        forks = kernel.fork(2)
        for fork in (*forks, kernel):
            after = fork.run("'kept' in globals()")
            assert after.value == "False" and after.restarted and after.note, after
        assert forks[0].run("7 * 6").value == "42"
        for fork in forks:
            fork.close()


def test_a_big_cell_after_the_disk_is_full(client: CollimateClient | GatewayClient) -> None:
    """A cell too big for a command line goes as a file: a sandbox whose
    disk an earlier cell filled cannot take it, which is that cell's doing
    (the kernel is made anew, the cell runs)."""
    with Sandbox("sabotage", client=client) as sandbox, sandbox.kernel(timeout=5) as kernel:
        kernel.run(FILL + "fill('/tmp')")
        big = kernel.run("blob = " + repr("a" * 100_000) + "\nprint(len(blob))")
        assert big.stdout == "100000\n", big
