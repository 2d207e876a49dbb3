"""Limits and kills of the engine, with real processes: timeouts kill the whole
tree, cancellation and close leave nothing, output is capped while drained,
rlimits hold, a fork bomb is contained (namespaces)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time

import pytest

from collimate_rl.local_backend.engine import ExecJob, ForkEngine, Limits, TemplateSpec, make_engine
from collimate_rl.testing.engine import run_with_engine, started_engine
from collimate_rl.testing.host import skip_unless_host_lacks_namespaces
from collimate_rl.testing.procs import start_time

SEED = "ab" * 32
MODES = ["process", pytest.param("namespaces", marks=pytest.mark.namespaces)]


started = started_engine
run = run_with_engine


def job(source: str, *, kind: str = "code", timeout: float = 20.0) -> ExecJob:
    return ExecJob(kind, source, SEED, timeout)  # type: ignore[arg-type]


def token() -> str:
    """A sleep duration no other process on the machine uses: it names our strays."""
    return f"{700 + os.getpid() % 89}.{time.monotonic_ns() % 10**9:09d}"


def procs_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read()
            with open(f"/proc/{entry}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmd and state != "Z":
            found.append(int(entry))
    return found


async def wait_for_procs(marker: str, count: int = 1, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while len(procs_with(marker)) < count:
        assert time.monotonic() < deadline, f"no process with {marker} appeared"
        await asyncio.sleep(0.02)


PY = TemplateSpec(id="py", kind="python")


@pytest.mark.parametrize("mode", MODES)
def test_timeout_kills_the_whole_tree_and_says_so(mode: str) -> None:
    mark = token()

    async def body(engine: ForkEngine) -> None:
        clone = await engine.open_clone(PY, egress=None)
        try:
            # children, a grandchild that left the process group, and the exec itself hang
            out = await clone.run(
                job(
                    f"echo started; sleep {mark} & setsid sleep {mark} & "
                    f"sh -c 'sleep {mark} & wait' & sleep {mark}",
                    kind="command",
                    timeout=1,
                )
            )
            assert out.timed_out and out.exit_code == -1
            assert out.output == b"started\ntimeout after 1.0s\n"
            assert procs_with(mark) == []
            # the session survives its timeout
            after = await clone.run(job("print('still here')"))
            assert after.output == b"still here\n"
        finally:
            await clone.close()

    run(mode, [PY], body)


@pytest.mark.parametrize("mode", MODES)
def test_infinite_loop_times_out(mode: str) -> None:
    async def body(engine: ForkEngine) -> None:
        clone = await engine.open_clone(PY, egress=None)
        try:
            out = await clone.run(
                job("print('spin', flush=True)\nwhile True:\n    pass", timeout=1)
            )
        finally:
            await clone.close()
        assert out.timed_out and out.exit_code == -1
        assert out.output.startswith(b"spin\n") and b"timeout after 1.0s" in out.output

    run(mode, [PY], body)


@pytest.mark.parametrize("mode", MODES)
def test_cancelling_run_kills_the_tree_before_propagating(mode: str) -> None:
    mark = token()

    async def body(engine: ForkEngine) -> None:
        clone = await engine.open_clone(PY, egress=None)
        try:
            task = asyncio.ensure_future(
                clone.run(
                    job(
                        f"sleep {mark} & setsid sleep {mark} & sleep {mark}",
                        kind="command",
                        timeout=60,
                    )
                )
            )
            await wait_for_procs(mark, 3)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert procs_with(mark) == []
        finally:
            await clone.close()

    run(mode, [PY], body)


@pytest.mark.parametrize("mode", MODES)
def test_close_kills_background_processes_and_removes_files(mode: str) -> None:
    mark = token()

    async def body(engine: ForkEngine) -> None:
        clone = await engine.open_clone(PY, egress=None)
        out = await clone.run(
            job(f"(setsid sleep {mark} >/dev/null 2>&1 &) ; pwd", kind="command", timeout=10)
        )
        workdir = out.output.decode().strip()
        await wait_for_procs(mark)
        if mode == "process":
            assert os.path.isdir(workdir)
        await clone.close()
        await clone.close()  # idempotent
        assert procs_with(mark) == []
        if mode == "process":
            assert not os.path.exists(workdir)

    run(mode, [PY], body)


@pytest.mark.parametrize("mode", MODES)
def test_engine_close_leaves_no_process_and_no_directory(mode: str) -> None:
    mark = token()
    seen: dict[str, object] = {}
    # zygotes this process already has (another test's backend, kept by a
    # fixture in this worker): not this engine's to take down
    others = {pid for pid in procs_with("_zygote.py") if _is_descendant(pid)}

    async def main() -> None:
        engine = make_engine(mode, pool_size=2)  # type: ignore[arg-type]
        try:
            await engine.start([PY])
        except RuntimeError as exc:
            await engine.close()
            skip_unless_host_lacks_namespaces(exc, mode)
        clone = await engine.open_clone(PY, egress=None)
        task = asyncio.ensure_future(clone.run(job(f"sleep {mark}", kind="command", timeout=60)))
        await wait_for_procs(mark)
        # (with its start: pid_max is 32768 here, a pid is soon another's)
        seen["zygotes"] = [(z.proc.pid, start_time(z.proc.pid)) for z in engine._zygotes.values()]
        seen["state"] = engine._state_dir
        await engine.close()
        with contextlib.suppress(BaseException):
            await task

    asyncio.run(main())
    assert procs_with(mark) == []
    for pid, start in seen["zygotes"]:  # type: ignore[attr-defined]
        assert start_time(pid) != start
    assert not os.path.exists(str(seen["state"]))
    mine = {pid for pid in procs_with("_zygote.py") if _is_descendant(pid)}
    assert mine <= others, mine - others


def _is_descendant(pid: int) -> bool:
    me = os.getpid()
    while pid > 1:
        if pid == me:
            return True
        try:
            with open(f"/proc/{pid}/stat") as fh:
                pid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            return False
    return False


@pytest.mark.parametrize("mode", MODES)
def test_output_is_capped_while_the_pipe_is_drained(mode: str) -> None:
    small = TemplateSpec(id="small", kind="python", limits=Limits(output_bytes=1000))

    async def body(engine: ForkEngine) -> None:
        clone = await engine.open_clone(small, egress=None)
        try:
            capped = await clone.run(job("print('x' * 5000)\nprint('done')"))
        finally:
            await clone.close()
        assert capped.truncated and capped.output == b"x" * 1000 and capped.exit_code == 0
        default = await engine.open_clone(PY, egress=None)
        try:
            # 100 MB through the pipe: the writer never blocks, 16 MiB are kept
            flood = await default.run(
                job(
                    "import sys\nchunk = b'y' * (1 << 20)\nfor _ in range(100):\n"
                    "    sys.stdout.buffer.write(chunk)\nsys.stdout.flush()\nprint('end')",
                    timeout=60,
                )
            )
        finally:
            await default.close()
        assert flood.truncated and not flood.timed_out and flood.exit_code == 0
        assert len(flood.output) == 16 * 1024 * 1024

    run(mode, [small, PY], body)


@pytest.mark.parametrize("mode", MODES)
def test_memory_cpu_and_file_size_limits_hold(mode: str) -> None:
    tight = TemplateSpec(
        id="tight",
        kind="python",
        limits=Limits(cpu_seconds=1, memory_bytes=256 << 20, file_size_bytes=1 << 20),
    )

    async def body(engine: ForkEngine) -> None:
        clone = await engine.open_clone(tight, egress=None)
        try:
            memory = await clone.run(job("x = bytearray(512 << 20)\nprint('allocated')"))
            big_file = await clone.run(job("open('big.bin', 'wb').write(b'z' * (2 << 20))"))
            cpu = await clone.run(job("while True:\n    pass", timeout=30))
        finally:
            await clone.close()
        assert memory.exit_code == 1 and b"MemoryError" in memory.output
        assert b"allocated" not in memory.output
        assert big_file.exit_code == 1 and b"File too large" in big_file.output
        # RLIMIT_CPU: SIGXCPU (128 + 24) at the soft limit, SIGKILL at the hard one
        assert not cpu.timed_out and cpu.exit_code in (128 + 24, 128 + 9)

    run(mode, [tight], body)


@pytest.mark.namespaces
def test_a_fork_bomb_is_contained_and_cleaned_up() -> None:
    bomb = TemplateSpec(id="bomb", kind="python", limits=Limits(max_processes=64))

    async def body(engine: ForkEngine) -> None:
        clone = await engine.open_clone(bomb, egress=None)
        neighbour = await engine.open_clone(bomb, egress=None)
        try:
            out = await clone.run(
                job(
                    "import os\nn = 0\nwhile True:\n    try:\n        os.fork()\n"
                    "    except OSError:\n        n += 1\n        if n == 1 and os.getpid() == 2:\n"
                    "            print('fork refused', flush=True)",
                    timeout=6,  # (the cap is met in well under a second; a loaded machine is slow)
                )
            )
            assert out.timed_out and out.exit_code == -1
            assert b"fork refused" in out.output
            count = await clone.run(
                job("import os; print(len([p for p in os.listdir('/proc') if p.isdigit()]))")
            )
            # only the clone's init and this exec remain in its pid namespace
            assert count.output == b"2\n"
            ok = await neighbour.run(job("print('unaffected')"))
            assert ok.output == b"unaffected\n"
        finally:
            await clone.close()
            await neighbour.close()

    run("namespaces", [bomb], body)

