"""``Kernel.fork(n)`` and the kernels' budget, on a real namespaced local
backend over both wires: forks hold the parent's live state (copied by
fork(2), not rebuilt), change it apart, cannot reach one another (shown
from inside the sandbox), carry group_seeds' seeds, and leave nothing when
closed; a dead kernel leaves nothing; ``/v1/health`` lists live kernels;
idle kernels are reaped after the server's ``kernel_ttl``."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from collimate_rl import (
    AsyncCollimateClient,
    AsyncSandbox,
    CellResult,
    CollimateClient,
    GatewayClient,
    Kernel,
    Sandbox,
    group_seeds,
)
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.testing.engine import namespaced_backend

pytestmark = pytest.mark.namespaces

PRO = "col_pro_kernel-fork-tests"
TEMPLATE = {"id": "kernel", "kind": "python", "limits": {"processes": 96}}
WIRES = ("daemon", "gateway")
FORKS = 8
# 100 MB made by a fixed computation (about a second): what a fork must not redo
BUILD = (
    "import hashlib\n"
    "data = bytearray().join(hashlib.sha512(i.to_bytes(8, 'little')).digest()"
    " for i in range(1_562_500))\n"
    "digest = hashlib.sha256(data).hexdigest()\n"
    "len(data)"
)
# what the processes of the sandbox are, read from its /proc by a plain exec
PROCESSES = (
    "import json, os\nout = {}\nfor p in os.listdir('/proc'):\n"
    "    try:\n        stat = open(f'/proc/{p}/stat').read()\n"
    "    except (OSError, ValueError):\n        continue\n"
    "    comm, _, rest = stat.partition('(')[2].rpartition(')')\n"
    "    if rest.split()[0] != 'Z':\n        out[p] = comm\n"
    "print(json.dumps(out))"
)


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with namespaced_backend([TEMPLATE], api_keys=[PRO]) as server:
        yield server


def client_for(backend: LocalCollimateBackend, wire: str) -> CollimateClient | GatewayClient:
    if wire == "daemon":
        return CollimateClient(backend.base_url)
    return GatewayClient(api_key=PRO, base_url=backend.base_url)


@pytest.fixture(params=WIRES)
def sandbox(request: pytest.FixtureRequest, backend: LocalCollimateBackend) -> Iterator[Sandbox]:
    with client_for(backend, request.param) as client, Sandbox("kernel", client=client) as sb:
        yield sb


def ok(result: CellResult) -> CellResult:
    assert result.error is None and not result.restarted and not result.timed_out, result
    return result


def kernel_processes(sandbox: Sandbox) -> list[str]:
    """The kernel and keeper processes in the sandbox now (by their names)."""
    out = sandbox.exec(code=PROCESSES)
    assert out.exit_code == 0, out
    names: dict[str, str] = json.loads(out.stdout)
    return sorted(n for n in names.values() if n in ("collimate-kern", "collimate-keep", "sleep"))


def eventually(check: Callable[[], bool], what: str, within: float = 30.0) -> None:
    """Poll ``check`` (a state the server reaches by itself) until it holds."""
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.1)


def live_kernels(backend: LocalCollimateBackend, session_id: str | None) -> int:
    kernels = httpx.get(f"{backend.base_url}/v1/health", timeout=30).json()["kernels"]
    return int(kernels["sessions"].get(session_id, 0))


def test_forks_hold_the_parents_state_apart_and_cannot_reach_each_other(
    sandbox: Sandbox,
) -> None:
    with sandbox.kernel(timeout=120) as parent:
        assert ok(parent.run(BUILD)).value == "100000000"
        digest = ok(parent.run("digest")).value
        ok(parent.run("import os\nopen('/tmp/parent-secret', 'w').write('p')\npid = os.getpid()"))
        parent_pid = ok(parent.run("pid")).value
        first = ok(parent.run("data[0]")).value
        base = "ab" * 32
        forks = parent.fork(FORKS, base_seed=base)
        try:
            assert len(forks) == FORKS
            assert [f.seed for f in forks] == group_seeds(FORKS, "crn", base)
            assert all(f.isolation and f.isolation.startswith("landlock") for f in forks), forks
            pids = []
            for i, fork in enumerate(forks):
                # the object is the parent's, whole: not rebuilt, just there
                seen = ok(fork.run("import hashlib\nhashlib.sha256(data).hexdigest()")).value
                assert seen == digest
                ok(fork.run(f"data[0] = {i}\nopen('mine', 'w').write('{i}')"))
                pids.append(ok(fork.run("os.getpid()")).value)
                # its seed, as group_seeds gave it, seeds its random and is visible
                seed = fork.seed
                assert seed is not None
                draw = "import random\n(os.environ['COLLIMATE_SEED'], random.random())"
                drawn = ok(fork.run(draw))
                assert drawn.value == repr((seed, random.Random(int(seed, 16)).random()))
            for i, fork in enumerate(forks):
                assert ok(fork.run("data[0]")).value == str(i)  # its own change only
            assert ok(parent.run("data[0]")).value == first
            # from inside fork 0: fork 1 and the parent are out of reach
            other = forks[1]
            probe = (
                "import socket\nresults = {}\n"
                "def attempt(name, fn):\n"
                "    try:\n        fn()\n        results[name] = 'allowed'\n"
                "    except OSError as exc:\n        results[name] = type(exc).__name__\n"
                f"attempt('signal fork', lambda: os.kill({pids[1]}, 0))\n"
                f"attempt('signal parent', lambda: os.kill({parent_pid}, 0))\n"
                f"attempt('read fork file', lambda: open('{other.directory}/work/mine').read())\n"
                # what the runner trusts in its own directory is not the fork's to change
                f"attempt('own program', lambda: open('{forks[0].directory}/kernel.py', 'a'))\n"
                f"attempt('own fork.json', lambda: open('{forks[0].directory}/fork.json', 'a'))\n"
                f"attempt('own address', lambda: open('{forks[0].directory}/address', 'a'))\n"
                "attempt('read parent file', lambda: open('/tmp/parent-secret').read())\n"
                f"attempt('proc of fork', lambda: open('/proc/{pids[1]}/environ').read())\n"
                f"attempt('proc of parent', lambda: open('/proc/{parent_pid}/environ').read())\n"
                "results"
            )
            reached = ok(forks[0].run(probe + "\nsorted(set(results.values()))"))
            assert reached.value == "['PermissionError']", ok(forks[0].run("results"))
            # the address file itself is out of reach, so the socket is tried by name
            connect = (
                f"name = {json.dumps(_address(sandbox, other.directory))}\n"
                "s = socket.socket(socket.AF_UNIX)\n"
                "try:\n    s.connect('\\0' + name)\n    r = 'allowed'\n"
                "except OSError as exc:\n    r = type(exc).__name__\nr"
            )
            assert ok(forks[0].run(connect)).value == "'PermissionError'"
            assert ok(forks[1].run("open('mine').read()")).value == "'1'"  # it is there
        finally:
            for fork in forks:
                fork.close()
        assert ok(parent.run("len(data)")).value == "100000000"  # the parent goes on
    # closing forks and parent left nothing (their processes reaped by the sandbox's init)
    eventually(lambda: kernel_processes(sandbox) == [], "no kernel process left")


def _address(sandbox: Sandbox, directory: str) -> str:
    out = sandbox.exec(command=f"cat {directory}/address")
    assert out.exit_code == 0, out
    return out.stdout.strip()


def test_vanilla_forks_draw_seeds_of_their_own_and_a_dead_fork_restarts_confined(
    sandbox: Sandbox,
) -> None:
    with sandbox.kernel() as parent:
        ok(parent.run("x = 41"))
        forks = parent.fork(2, seed_mode="vanilla")
        try:
            seeds = [f.seed for f in forks]
            assert all(s and len(s) == 64 for s in seeds) and seeds[0] != seeds[1], seeds
            assert ok(forks[0].run("x + 1")).value == "42"
            died = forks[0].run("import os\nos._exit(0)")
            assert died.restarted and died.error is not None, died
            # a fresh interpreter in the fork's place: same seed, still confined
            assert forks[0].run("x").error is not None
            fresh = ok(forks[0].run("import os\n(os.environ['COLLIMATE_SEED'], os.getcwd())"))
            assert fresh.value == repr((seeds[0], forks[0].directory + "/work"))
            denied = forks[0].run("open('/tmp/anything', 'w')")
            assert denied.error is not None and denied.error.type == "PermissionError", denied
            with pytest.raises(RuntimeError):
                forks[1].fork(1)  # a fork cannot make the directory a fork of its own needs
        finally:
            for fork in forks:
                fork.close()
    eventually(lambda: kernel_processes(sandbox) == [], "no kernel process left")


def test_a_dead_kernel_leaves_nothing_and_health_lists_live_kernels(
    sandbox: Sandbox, backend: LocalCollimateBackend
) -> None:
    assert live_kernels(backend, sandbox.session_id) == 0
    kernel: Kernel = sandbox.kernel()
    ok(kernel.run("import subprocess\nchild = subprocess.Popen(['sleep', '600'])"))
    forks = kernel.fork(2)
    assert live_kernels(backend, sandbox.session_id) == 3
    for fork in forks:
        fork.close()
    eventually(lambda: live_kernels(backend, sandbox.session_id) == 1, "the forks gone")
    assert kernel_processes(sandbox) == ["collimate-keep", "collimate-kern", "sleep"]
    killed = sandbox.exec(command=f"kill -9 $(cat {kernel.directory}/pid)")
    assert killed.exit_code == 0, killed
    # its keeper removes its files and kills what it left (the sleep) and itself
    eventually(lambda: kernel_processes(sandbox) == [], "the dead kernel's processes gone")
    leftovers = sandbox.exec(command=f"ls {kernel.directory}")
    # (no pid, address or pgid file: __pycache__ is the runner's bytecode)
    expected = ["__pycache__", "kernel.log", "kernel.py", "started"]
    assert leftovers.stdout.split() == expected, leftovers
    assert live_kernels(backend, sandbox.session_id) == 0
    kernel.close()


@pytest.fixture(scope="module")
def reaping_backend() -> Iterator[LocalCollimateBackend]:
    with namespaced_backend([TEMPLATE], kernel_ttl=1.0) as server:
        yield server


def test_idle_kernels_are_reaped_after_the_servers_ttl(
    reaping_backend: LocalCollimateBackend,
) -> None:
    with (
        CollimateClient(reaping_backend.base_url) as client,
        Sandbox("kernel", client=client) as sb,
        sb.kernel() as kernel,
    ):
        ok(kernel.run("x = 1"))
        kernel.fork(1)
        assert live_kernels(reaping_backend, sb.session_id) in (1, 2)  # unless reaped already
        eventually(lambda: live_kernels(reaping_backend, sb.session_id) == 0, "kernels reaped")
        health = httpx.get(f"{reaping_backend.base_url}/v1/health", timeout=30).json()
        assert health["kernels"]["reaped"] >= 2 and health["kernels"]["idle_ttl_s"] == 1.0
        eventually(lambda: kernel_processes(sb) == [], "the reaped kernels' processes gone")
        after = kernel.run("x")  # the next cell finds it gone and starts afresh
        assert after.restarted and after.error is not None, after


def test_the_async_fork(backend: LocalCollimateBackend) -> None:
    async def body() -> None:
        async with (
            AsyncCollimateClient(backend.base_url) as client,
            AsyncSandbox("kernel", client=client) as sb,
            sb.kernel() as kernel,
        ):
            assert ok(await kernel.run("x = [1, 2]\nlen(x)")).value == "2"
            # numpy's global generator is seeded too, when the kernel imported numpy
            has_numpy = (await kernel.run("import numpy")).ok
            if not has_numpy:  # this guest has none: a stand-in records the call it gets
                stand_in = (
                    "import sys, types\nnumpy = types.ModuleType('numpy')\n"
                    "record = lambda s: setattr(numpy, 'got', s)\n"
                    "numpy.random = types.SimpleNamespace(seed=record)\n"
                    "sys.modules['numpy'] = numpy"
                )
                ok(await kernel.run(stand_in))
            forks = await kernel.fork(2, base_seed="cd" * 32)
            for i, fork in enumerate(forks):
                ok(await fork.run(f"x.append({i})"))
            values = [(await fork.run("x")).value for fork in forks]
            assert values == ["[1, 2, 0]", "[1, 2, 1]"]
            drawn = [(await fork.run("import random\nrandom.random()")).value for fork in forks]
            assert drawn == [repr(random.Random(int("cd" * 32, 16)).random())] * 2
            if has_numpy:
                draw = "int(numpy.random.randint(1 << 30))"
                seed = int("cd" * 32, 16) % (1 << 32)
                reference = f"int(numpy.random.RandomState({seed}).randint(1 << 30))"
                expected = ok(await kernel.run(reference)).value
                assert [(await fork.run(draw)).value for fork in forks] == [expected] * 2
            else:
                got = [(await fork.run("numpy.got")).value for fork in forks]
                assert got == [str(int("cd" * 32, 16) % (1 << 32))] * 2
            for fork in forks:
                await fork.close()

    asyncio.run(body())
