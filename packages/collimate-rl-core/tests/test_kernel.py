"""``Sandbox.kernel()``: a stateful Python interpreter in a real namespaced
local backend's sandbox, over both wires (the daemon's ``CollimateClient``
and a pro ``GatewayClient``), blocking and async."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from collimate_rl import (
    AsyncCollimateClient,
    AsyncGatewayClient,
    AsyncKernel,
    AsyncSandbox,
    CellResult,
    CollimateClient,
    CollimateError,
    GatewayClient,
    Kernel,
    Sandbox,
)
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.testing.engine import namespaced_backend

pytestmark = pytest.mark.namespaces

PRO = "col_pro_kernel-tests"
# a python template with a process cap, so a fork bomb meets a wall
TEMPLATE = {"id": "kernel", "kind": "python", "limits": {"processes": 64}}
# a template whose code is shell: the kernel's cells go by command there
SHELL = {"id": "kernel-sh", "kind": "shell", "limits": {"processes": 64}}
WIRES = ("daemon", "gateway")
IGNORES_INTERRUPTS = (
    "import time\nwhile True:\n    try:\n        time.sleep(0.2)\n"
    "    except BaseException:\n        pass"
)


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with namespaced_backend([TEMPLATE, SHELL], api_keys=[PRO]) as server:
        yield server


@pytest.fixture(params=WIRES)
def sandbox(request: pytest.FixtureRequest, backend: LocalCollimateBackend) -> Iterator[Sandbox]:
    client: CollimateClient | GatewayClient
    if request.param == "daemon":
        client = CollimateClient(backend.base_url)
    else:
        client = GatewayClient(api_key=PRO, base_url=backend.base_url)
    with client, Sandbox("kernel", client=client) as sb:
        yield sb


@pytest.fixture
def kernel(sandbox: Sandbox) -> Iterator[Kernel]:
    with sandbox.kernel(timeout=20, output_limit=1000) as k:
        yield k


def ok(result: CellResult) -> CellResult:
    assert result.error is None and not result.restarted and not result.timed_out, result
    return result


def test_names_persist_and_a_trailing_expression_is_the_value(kernel: Kernel) -> None:
    assert ok(kernel.run("import math\nx = 5\nprint('hi')")).value is None
    first = ok(kernel.run("import sys\nprint('out')\nprint('err', file=sys.stderr)\nx * 2"))
    assert (first.stdout, first.stderr, first.value) == ("out\n", "err\n", "10")
    assert ok(kernel.run("1+1")).value == "2"
    assert ok(kernel.run("'a' + 'b'")).value == "'ab'"  # a repr, as a REPL shows it
    assert ok(kernel.run("math.sqrt(16)")).value == "4.0"
    assert ok(kernel.run("y = x + 1")).value is None  # a statement
    assert ok(kernel.run("print('side effect')")).value is None  # an expression worth None
    assert ok(kernel.run("_ + 1")).value == "5.0"  # the last value, as a REPL keeps it


def test_what_a_subprocess_writes_is_captured_in_order(kernel: Kernel) -> None:
    mixed = ok(kernel.run("import os\nprint('a')\nos.system('echo b; echo e >&2')\nprint('c')"))
    assert (mixed.stdout, mixed.stderr) == ("a\nb\nc\n", "e\n")
    flood = kernel.run("import os\nos.system('yes | head -c 300000')\nprint('after')")
    assert flood.truncated and flood.error is None, flood
    assert flood.stdout == "y\n" * 500  # the first 1000 characters; the rest dropped


def test_an_exception_carries_only_the_cells_frames(kernel: Kernel) -> None:
    ok(kernel.run("def inner():\n    raise ValueError('bad value')\n"))
    result = kernel.run("def outer():\n    inner()\nouter()")
    assert result.error is not None and not result.restarted, result
    assert (result.error.type, result.error.message) == ("ValueError", "bad value")
    files = [
        line.split('"')[1]
        for line in result.error.traceback.splitlines()
        if line.lstrip().startswith("File ")
    ]
    assert len(files) == 3 and all(name.startswith("<cell ") for name in files), files
    assert "kernel.py" not in result.error.traceback
    assert "raise ValueError('bad value')" in result.error.traceback  # the source shown
    syntax = kernel.run("def broken(:\n")
    assert syntax.error is not None and syntax.error.type == "SyntaxError", syntax
    assert "kernel.py" not in syntax.error.traceback
    assert ok(kernel.run("1")).value == "1"


def test_a_timed_out_cell_is_interrupted_and_the_state_kept(kernel: Kernel) -> None:
    ok(kernel.run("x = 5"))
    slow = kernel.run("import time\ntime.sleep(100)", timeout=1)
    assert slow.timed_out and not slow.restarted, slow
    assert slow.error is not None and slow.error.type == "KeyboardInterrupt"
    assert "kernel.py" not in slow.error.traceback
    assert ok(kernel.run("x")).value == "5"


def test_a_cell_that_ignores_the_interrupt_costs_a_restart(kernel: Kernel) -> None:
    ok(kernel.run("x = 5"))
    runaway = kernel.run(IGNORES_INTERRUPTS, timeout=1)
    assert runaway.timed_out and runaway.restarted, runaway
    assert runaway.error is not None and runaway.error.type == "KernelRestarted"
    gone = kernel.run("x")
    assert gone.error is not None and gone.error.type == "NameError", gone
    assert ok(kernel.run("x = 7\nx")).value == "7"


def test_output_and_values_are_capped(kernel: Kernel) -> None:
    loud = kernel.run("import sys\nprint('o' * 5000)\nsys.stderr.write('e' * 5000)\n'v' * 10")
    assert loud.truncated and loud.error is None, loud
    assert loud.stdout == "o" * 1000 and loud.stderr == "e" * 1000
    assert loud.value == repr("v" * 10)
    big = kernel.run("'v' * 5000")
    assert big.truncated and big.value is not None and len(big.value) == 1000
    assert not ok(kernel.run("print('quiet')")).truncated


def test_a_cell_bigger_than_a_command_line_travels_as_a_file(kernel: Kernel) -> None:
    code = "blob = " + repr("a" * 200_000) + "\nlen(blob)"
    assert ok(kernel.run(code)).value == "200000"


def test_hostile_cells_are_contained(kernel: Kernel) -> None:
    ok(kernel.run("import os, signal, sys\nx = 5"))
    exits = kernel.run("sys.exit(3)")
    assert exits.error is not None and exits.error.type == "SystemExit", exits
    assert exits.error.message == "3" and not exits.restarted
    assert ok(kernel.run("x")).value == "5"  # SystemExit ends the cell, not the kernel

    ok(kernel.run("os.kill(os.getppid(), signal.SIGKILL)"))  # its parent is the keeper
    assert ok(kernel.run("x")).value == "5"

    died = kernel.run("os._exit(0)")
    assert died.restarted and died.error is not None and died.error.type == "KernelDied"
    assert kernel.run("x").error is not None  # a fresh interpreter
    ok(kernel.run("import os, signal\nx = 6"))

    killed = kernel.run("os.kill(os.getpid(), signal.SIGKILL)")
    assert killed.restarted, killed
    assert ok(kernel.run("1+1")).value == "2"

    bomb = kernel.run(
        "import os\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n"
        "            import time; time.sleep(60); os._exit(0)\n        n += 1\n"
        "except OSError as exc:\n    refused = type(exc).__name__\nn < 64",
        timeout=15,
    )
    assert bomb.restarted or bomb.value == "True", bomb
    after = kernel.run("21 * 2")
    assert after.value == "42", after  # the cap held and the kernel answers


def test_restart_and_close(sandbox: Sandbox) -> None:
    kernel = sandbox.kernel()
    assert ok(kernel.run("x = 1\nx")).value == "1"
    kernel.restart()
    assert kernel.run("x").error is not None
    directory = kernel.directory
    kernel.close()
    assert sandbox.exec(command=f"test -e {directory}").exit_code != 0  # removed
    with pytest.raises(RuntimeError):
        kernel.run("1")
    with sandbox.kernel() as second, sandbox.kernel() as third:  # kernels are apart
        ok(second.run("x = 'second'"))
        assert third.run("x").error is not None
        assert ok(second.run("x")).value == "'second'"


def test_a_kernel_killed_between_cells_is_restarted_by_the_next(sandbox: Sandbox) -> None:
    with sandbox.kernel() as kernel:
        ok(kernel.run("x = 1"))
        killed = sandbox.exec(command=f"kill -9 $(cat {kernel.directory}/pid)")
        assert killed.exit_code == 0, killed
        after = kernel.run("x")
        assert after.restarted and not after.timed_out, after
        assert after.error is not None and after.error.type == "NameError"
        assert ok(kernel.run("x = 2\nx")).value == "2"


def test_cells_go_by_code_exec_and_a_kernel_they_restart_lives_on(sandbox: Sandbox) -> None:
    with sandbox.kernel() as kernel:
        ok(kernel.run("x = 1"))  # rides with the install (a command)
        ok(kernel.run("x"))  # the probe, then a code exec
        assert kernel._code_runner == (sandbox.session_id, True)
        killed = sandbox.exec(command=f"kill -9 $(cat {kernel.directory}/pid)")
        assert killed.exit_code == 0, killed
        after = kernel.run("x")  # a code exec's runner starts the new kernel...
        assert after.restarted and after.error is not None and after.error.type == "NameError"
        ok(kernel.run("y = 5"))
        assert ok(kernel.run("y + 1")).value == "6"  # ...which outlived that exec


def test_a_shell_template_runs_its_cells_by_command(backend: LocalCollimateBackend) -> None:
    with (
        CollimateClient(backend.base_url) as client,
        Sandbox("kernel-sh", client=client) as sb,
        sb.kernel() as kernel,
    ):
        ok(kernel.run("import os\nx = 40"))
        assert ok(kernel.run("x + 1")).value == "41"
        assert kernel._code_runner == (sb.session_id, False)
        assert ok(kernel.run("x + 2")).value == "42"


def test_a_kernel_follows_its_sandbox_through_a_reset(sandbox: Sandbox) -> None:
    kernel = sandbox.kernel()
    ok(kernel.run("x = 1"))
    sandbox.reset()  # a fresh clone of the template: the old interpreter is gone
    after = kernel.run("x")
    assert after.restarted and after.error is not None and after.error.type == "NameError"
    assert ok(kernel.run("x = 3\nx")).value == "3"
    kernel.close()


def test_a_sandbox_gone_is_an_infra_error_not_a_cell_error(sandbox: Sandbox) -> None:
    kernel = sandbox.kernel()
    ok(kernel.run("x = 1"))
    assert sandbox.session_id is not None
    sandbox.client.delete_session(sandbox.session_id)
    with pytest.raises(CollimateError):
        kernel.run("x")


@pytest.mark.parametrize("wire", WIRES)
def test_the_async_kernel(backend: LocalCollimateBackend, wire: str) -> None:
    async def body() -> None:
        client: AsyncCollimateClient | AsyncGatewayClient
        if wire == "daemon":
            client = AsyncCollimateClient(backend.base_url)
        else:
            client = AsyncGatewayClient(api_key=PRO, base_url=backend.base_url)
        async with (
            client,
            AsyncSandbox("kernel", client=client) as sb,
            sb.kernel(timeout=20) as kernel,
        ):
            assert isinstance(kernel, AsyncKernel)
            assert ok(await kernel.run("x = 5\n1+1")).value == "2"
            slow = await kernel.run("import time\ntime.sleep(100)", timeout=1)
            assert slow.timed_out and not slow.restarted, slow
            assert ok(await kernel.run("x")).value == "5"
            runaway = await kernel.run(IGNORES_INTERRUPTS, timeout=1)
            assert runaway.restarted, runaway
            assert (await kernel.run("x")).error is not None

    asyncio.run(body())
