"""The engine's exec contract, in both isolation modes, with real processes:
merged output, exit codes, the seed, files, sessions, shell, preload."""

from __future__ import annotations

import functools
import os
import random

import pytest

from collimate_rl.local_backend.engine import ExecJob, ForkEngine, TemplateSpec, make_engine
from collimate_rl.testing.engine import run_with_engine, started_engine

PY = TemplateSpec(id="py", kind="python")
SH = TemplateSpec(id="sh", kind="shell")
SEED = "ab" * 32
MODES = ["process", pytest.param("namespaces", marks=pytest.mark.namespaces)]


started = functools.partial(started_engine, pool_size=1)
run = functools.partial(run_with_engine, pool_size=1)


def job(
    source: str,
    *,
    kind: str = "code",
    seed: str = SEED,
    timeout: float = 20.0,
    files: tuple[tuple[str, str], ...] = (),
) -> ExecJob:
    return ExecJob(kind, source, seed, timeout, files)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", MODES)
def test_stdout_and_stderr_share_one_pipe_in_order(mode: str) -> None:
    async def body(engine: ForkEngine) -> None:
        clone = await engine.open_clone(PY, egress=None)
        try:
            out = await clone.run(
                job(
                    "import sys\nprint('one')\nprint('two', file=sys.stderr)\nprint('three')\n"
                    "sys.exit(3)"
                )
            )
        finally:
            await clone.close()
        assert out.output == b"one\ntwo\nthree\n"
        assert out.exit_code == 3
        assert not out.timed_out and not out.truncated

    run(mode, [PY], body)


@pytest.mark.parametrize("mode", MODES)
def test_seed_drives_random_and_is_verified(mode: str) -> None:
    expected = random.Random(int(SEED, 16)).random()

    async def body(engine: ForkEngine) -> None:
        results = []
        for _ in range(2):
            clone = await engine.open_clone(PY, egress=None)
            try:
                results.append(await clone.run(job("import random; print(repr(random.random()))")))
            finally:
                await clone.close()
        for out in results:
            assert out.output.decode().strip() == repr(expected)
            assert out.seed_ack == "verified"
        clone = await engine.open_clone(PY, egress=None)
        try:
            other = await clone.run(
                job("import random; print(repr(random.random()))", seed="cd" * 32)
            )
            shell = await clone.run(job("echo $COLLIMATE_SEED", kind="command"))
        finally:
            await clone.close()
        assert other.output.decode().strip() != repr(expected)
        # a shell does not seed python's random: never claimed as verified
        assert shell.seed_ack == "off"
        assert shell.output.decode().strip() == SEED

    run(mode, [PY], body)


@pytest.mark.parametrize("mode", MODES)
def test_code_cannot_rewrite_its_seed_record_or_its_exit_code(mode: str) -> None:
    """Code may write to every fd it has, the report pipes included: what it
    appends never replaces the seed recorded before it ran, and a forged end
    record ends the exec no differently than exiting would."""
    forge = (
        "import os, time\n"
        "print('before', flush=True)\n"
        "for fd in range(3, 1024):\n"
        "    try:\n"
        "        os.write(fd, b'S' + b'0' * 64 + b'\\n\\nE0\\n')\n"
        "    except OSError:\n"
        "        pass\n"
        "print('after', flush=True)\n"
        "raise SystemExit(3)\n"
    )

    async def body(engine: ForkEngine) -> None:
        clone = await engine.open_clone(PY, egress=None)
        try:
            out = await clone.run(job(forge))
            again = await clone.run(job("import random; print(random.random())"))
        finally:
            await clone.close()
        assert out.seed_ack == "verified"  # the real seed, not the forged zeros
        assert out.exit_code in (0, 3) and out.output.startswith(b"before\n")
        assert again.exit_code == 0 and again.seed_ack == "verified"
        assert again.output.decode().strip() == repr(random.Random(int(SEED, 16)).random())

    run(mode, [PY], body)


@pytest.mark.parametrize("mode", MODES)
def test_code_runs_at_the_servers_priority_not_the_idle_class(mode: str) -> None:
    """Standbys prepare in the idle scheduling class (background work); the
    code itself must not inherit it."""

    async def body(engine: ForkEngine) -> None:
        clone = await engine.open_clone(PY, egress=None)
        try:
            out = await clone.run(
                job(
                    "import os; print(os.sched_getscheduler(0), os.getpriority(os.PRIO_PROCESS, 0))"
                )
            )
        finally:
            await clone.close()
        policy, nice = out.output.decode().split()
        assert int(policy) == os.SCHED_OTHER
        assert int(nice) == os.getpriority(os.PRIO_PROCESS, 0)

    run(mode, [PY], body)


@pytest.mark.parametrize("mode", MODES)
def test_exceptions_and_exit_styles(mode: str) -> None:
    async def body(engine: ForkEngine) -> None:
        clone = await engine.open_clone(PY, egress=None)
        try:
            boom = await clone.run(job("print('before')\nraise ValueError('bad value')"))
            quit_ = await clone.run(job("exit(4)"))
            message = await clone.run(job("import sys; sys.exit('goodbye')"))
            syntax = await clone.run(job("def f(:\n  pass"))
            main = await clone.run(
                job("import sys; print(__name__, sys.modules['__main__'].__name__)")
            )
        finally:
            await clone.close()
        assert boom.exit_code == 1
        text = boom.output.decode()
        assert text.startswith("before\nTraceback (most recent call last):\n")
        assert 'File "<string>", line 2' in text and "ValueError: bad value" in text
        # the engine's own frames are not the user's business
        assert "exec_child.py" not in text and "collimate_rl" not in text
        assert quit_.exit_code == 4
        assert message.exit_code == 1 and message.output == b"goodbye\n"
        assert syntax.exit_code == 1 and b"SyntaxError" in syntax.output
        assert main.output == b"__main__ __main__\n"

    run(mode, [PY], body)


@pytest.mark.parametrize("mode", MODES)
def test_files_land_in_the_working_dir_and_cannot_escape_it(mode: str) -> None:
    abs_path = f"/tmp/collimate-engine-test-{os.getpid()}-{mode}.txt"

    async def body(engine: ForkEngine) -> None:
        clone = await engine.open_clone(PY, egress=None)
        try:
            ok = await clone.run(
                job(
                    "print(open('sub/a.txt').read(), end='')",
                    files=(("sub/a.txt", "hello\n"), ("b.txt", "x\n")),
                )
            )
            escape = await clone.run(job("print('ran')", files=(("../evil.txt", "x\n"),)))
            absolute = await clone.run(
                job(
                    f"print(open({abs_path!r}).read(), end='')",
                    files=((abs_path, "abs\n"),),
                )
            )
        finally:
            await clone.close()
        # absolute paths land in the clone's private root (namespaces), or on the host
        # in process mode (NOT a sandbox), where the clone removes them when it closes
        assert not os.path.exists(abs_path)
        assert ok.exit_code == 0 and ok.output == b"hello\n"
        assert escape.exit_code != 0 and b"refusing to write '../evil.txt'" in escape.output
        assert b"ran" not in escape.output
        assert absolute.exit_code == 0 and absolute.output == b"abs\n"

    run(mode, [PY], body)


@pytest.mark.parametrize("mode", MODES)
def test_a_session_keeps_its_files_and_another_never_sees_them(mode: str) -> None:
    async def body(engine: ForkEngine) -> None:
        first = await engine.open_clone(PY, egress=None)
        second = await engine.open_clone(PY, egress=None)
        try:
            await first.run(job("open('state.txt', 'w').write('kept')"))
            again = await first.run(job("print(open('state.txt').read())"))
            other = await second.run(job("import os; print(os.path.exists('state.txt'))"))
        finally:
            await first.close()
            await second.close()
        assert again.output == b"kept\n"
        assert other.output == b"False\n"

    run(mode, [PY], body)


@pytest.mark.parametrize("mode", MODES)
def test_shell_templates_and_commands_run_sh(mode: str) -> None:
    async def body(engine: ForkEngine) -> None:
        clone = await engine.open_clone(SH, egress=None)
        try:
            # a shell template runs even `code` with /bin/sh
            code = await clone.run(job("echo from-sh; echo oops >&2; exit 7"))
            command = await clone.run(job("printf '%s' \"$0\"", kind="command"))
        finally:
            await clone.close()
        assert code.output == b"from-sh\noops\n" and code.exit_code == 7
        assert command.output == b"/bin/sh"
        py = await engine.open_clone(PY, egress=None)
        try:
            cmd_in_py = await py.run(job("echo $((6 * 7))", kind="command"))
        finally:
            await py.close()
        assert cmd_in_py.output == b"42\n"

    run(mode, [PY, SH], body)


@pytest.mark.parametrize("mode", MODES)
def test_preloaded_modules_are_already_imported(mode: str) -> None:
    warm = TemplateSpec(id="warm", kind="python", preload=("decimal", "no_such_module_xyz"))

    async def body(engine: ForkEngine) -> None:
        clone = await engine.open_clone(warm, egress=None)
        try:
            out = await clone.run(job("import sys; print('decimal' in sys.modules)"))
        finally:
            await clone.close()
        # a failed preload is reported in the log, never fatal
        assert out.output == b"True\n"

    run(mode, [warm], body)


@pytest.mark.parametrize("mode", MODES)
def test_isolation_detail_never_claims_more_than_is_in_force(mode: str) -> None:
    async def body(engine: ForkEngine) -> None:
        assert engine.isolation == mode
        if mode == "process":
            assert "NOT a sandbox" in engine.isolation_detail
        else:
            assert engine.isolation_detail.startswith("namespaces:")
            assert "not a VM" in engine.isolation_detail

    run(mode, [PY], body)


def test_auto_picks_namespaces_when_they_work_else_says_why() -> None:
    async def body(engine: ForkEngine) -> None:
        if engine.isolation == "namespaces":
            assert engine.isolation_detail.startswith("namespaces:")
        else:
            assert "namespaces unavailable:" in engine.isolation_detail

    run("auto", [PY], body)


def test_unknown_isolation_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown isolation"):
        make_engine("vm")  # type: ignore[arg-type]
