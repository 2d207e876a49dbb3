"""What a namespaced clone can and cannot reach, tried for real: its user and
processes, the host file system, another clone's files, the network."""

from __future__ import annotations

import ast
import functools
import os
import socket
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from collimate_rl.local_backend.engine import ExecJob, ForkEngine, TemplateSpec
from collimate_rl.testing.engine import run_with_engine

pytestmark = pytest.mark.namespaces

PY = TemplateSpec(id="py", kind="python")
NET = TemplateSpec(id="net", kind="python", networked=True)
SEED = "ab" * 32


def _interpreter_trees_under_tmp() -> set[str]:
    """Top-level names under /tmp of this interpreter's import paths."""
    paths = {os.path.abspath(p) for p in sys.path} | {os.path.realpath(p) for p in sys.path}
    return {p.split("/")[2] for p in paths if p.startswith("/tmp/")}


run = functools.partial(run_with_engine, "namespaces", pool_size=1)


async def once(
    engine: ForkEngine,
    template: TemplateSpec,
    source: str,
    egress: str | None = None,
    kind: str = "code",
) -> tuple[int, str]:
    clone = await engine.open_clone(template, egress=egress)  # type: ignore[arg-type]
    try:
        out = await clone.run(ExecJob(kind, source, SEED, 20.0))  # type: ignore[arg-type]
    finally:
        await clone.close()
    return out.exit_code, out.output.decode()


def test_code_runs_unprivileged_and_sees_only_its_own_processes() -> None:
    async def body(engine: ForkEngine) -> None:
        code, out = await once(
            engine,
            PY,
            (
                "import os\n"
                "pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n"
                "print(os.getuid(), os.geteuid(), os.getgid(), os.getgroups())\n"
                "print(pids, os.getpid())\n"
                "import socket; print(socket.gethostname())"
            ),
        )
        assert code == 0, out
        ids, pids, host = out.splitlines()
        uid, euid, gid, groups = ids.split(" ", 3)
        assert int(uid) >= 1_000_000 and uid == euid == gid and groups == "[]"
        # pid 1 is the clone itself, the other is this exec: nothing of the
        # host (and no clean twin: no exec of this engine asked for one)
        assert pids == "[1, 2] 2"
        assert host == "sandbox"

    run([PY], body)


def test_the_interpreter_stays_usable_and_private_homes_stay_hidden() -> None:
    home = os.path.expanduser("~")
    secret = Path(home) / f"collimate-secret-{uuid.uuid4().hex}"
    secret.write_text("private\n")

    async def body(engine: ForkEngine) -> None:
        code, out = await once(
            engine,
            PY,
            (
                # lazily imported stdlib modules load although pyenv may live under /root
                "import sys, os, fractions, statistics, encodings.idna, sqlite3\n"
                "print(fractions.Fraction(1, 3) + 1)\n"
                f"print(os.path.exists({str(secret)!r}))\n"
                "try:\n    open(os.path.join(sys.prefix, 'evil'), 'w')\n    print('WROTE')\n"
                "except OSError:\n    print('read-only')\n"
            ),
        )
        assert code == 0, out
        assert out == "4/3\nFalse\nread-only\n"

    try:
        run([PY], body)
    finally:
        secret.unlink()


def test_a_private_writable_root_like_a_vm() -> None:
    async def body(engine: ForkEngine) -> None:
        clone = await engine.open_clone(PY, egress=None)
        other = await engine.open_clone(PY, egress=None)
        try:
            made = await clone.run(
                ExecJob(
                    "code",
                    (
                        "import os\nos.makedirs('/task/in', exist_ok=True)\n"
                        "open('/task/in/x.txt', 'w').write('mine')\n"
                        "print(open('/task/given.txt').read().strip(),\n"
                        "      sorted(os.listdir('/task')))\n"
                        "try:\n    open('/etc/passwd', 'a')\n    print('WROTE /etc')\n"
                        "except OSError:\n    print('etc refused')\n"
                    ),
                    SEED,
                    20.0,
                    (("/task/given.txt", "from files"),),
                )
            )
            peek = await other.run(
                ExecJob("code", "import os; print(os.path.exists('/task'))", SEED, 20.0)
            )
        finally:
            await clone.close()
            await other.close()
        assert made.output == b"from files ['given.txt', 'in']\netc refused\n", made.output
        assert peek.output == b"False\n"

    run([PY], body)
    assert not os.path.exists("/task/in/x.txt")


def test_the_host_file_system_is_read_only() -> None:
    repo_file = Path(__file__).resolve()
    victim = f"/etc/collimate-isolation-{uuid.uuid4().hex}"

    async def body(engine: ForkEngine) -> None:
        _code, out = await once(
            engine,
            PY,
            (
                "import os\n"
                f"for path in ({victim!r}, {str(repo_file.parent / 'evil.txt')!r}, '/usr/evil'):\n"
                "    try:\n"
                "        open(path, 'w').write('x')\n"
                "        print('WROTE', path)\n"
                "    except OSError as exc:\n"
                "        print('refused', exc.errno)\n"
                f"try:\n    open({str(repo_file)!r}, 'a').write('x')\n"
                "    print('WROTE repo')\nexcept OSError as exc:\n    print('refused', exc.errno)\n"
                "print(open('/etc/hostname').read() != '' or True)"
            ),
        )
        assert "WROTE" not in out, out
        assert out.count("refused") == 4
        # as root in the clone (the engine itself) nothing leaks out either: absolute
        # `files` land in the clone's own root, never on the host
        clone = await engine.open_clone(PY, egress=None)
        try:
            res = await clone.run(ExecJob("code", "print('ok')", SEED, 20.0, ((victim, "x\n"),)))
        finally:
            await clone.close()
        assert b"cannot write" in res.output and res.exit_code == 1

    run([PY], body)
    assert not os.path.exists(victim)
    assert not (repo_file.parent / "evil.txt").exists()


def test_private_tmp_hides_the_host_and_other_clones() -> None:
    host_file = Path("/tmp") / f"collimate-host-secret-{uuid.uuid4().hex}"
    host_file.write_text("host secret\n")

    async def body(engine: ForkEngine) -> None:
        first = await engine.open_clone(PY, egress=None)
        second = await engine.open_clone(PY, egress=None)
        try:
            wrote = await first.run(
                ExecJob(
                    "code",
                    (
                        "import os\nopen('/tmp/mine.txt', 'w').write('first only')\n"
                        "open('/dev/shm/shm.txt', 'w').write('x')\n"
                        f"print(os.path.exists({str(host_file)!r}), os.getcwd())"
                    ),
                    SEED,
                    20.0,
                )
            )
            looked = await second.run(
                ExecJob(
                    "code",
                    (
                        "import os\nprint(os.path.exists('/tmp/mine.txt'), "
                        "os.path.exists('/dev/shm/shm.txt'), sorted(os.listdir('/tmp')))"
                    ),
                    SEED,
                    20.0,
                )
            )
        finally:
            await first.close()
            await second.close()
        assert wrote.output == b"False /tmp\n"
        mine, shm, listing = looked.output.decode().split(" ", 2)
        assert (mine, shm) == ("False", "False")
        # The only host paths a clone's /tmp may show are the interpreter's own
        # trees, bound back read-only when they live under /tmp (as in a checkout
        # under /tmp): never the host's other files.
        assert set(ast.literal_eval(listing)) <= _interpreter_trees_under_tmp()

    try:
        run([PY], body)
        assert not Path("/tmp/mine.txt").exists() and not Path("/dev/shm/shm.txt").exists()
    finally:
        host_file.unlink()


@pytest.fixture
def host_listener() -> Iterator[int]:
    """A TCP listener on the host's loopback (the only address ever probed)."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    try:
        yield srv.getsockname()[1]
    finally:
        srv.close()


def _connect_probe(port: int) -> str:
    return (
        "import socket\n"
        "s = socket.socket()\n"
        "s.settimeout(2)\n"
        "try:\n"
        f"    s.connect(('127.0.0.1', {port}))\n"
        "    print('connected')\n"
        "except OSError as exc:\n"
        "    print('blocked', type(exc).__name__)\n"
    )


def test_no_network_unless_networked_with_open_egress(host_listener: int) -> None:
    probe = _connect_probe(host_listener)

    async def body(engine: ForkEngine) -> None:
        _, isolated = await once(engine, PY, probe)
        _, net_none = await once(engine, NET, probe, egress="none")
        _, net_open = await once(engine, NET, probe, egress="open")
        _, net_default = await once(engine, NET, probe)
        # its own loopback still works inside an isolated clone
        _, own_lo = await once(
            engine,
            PY,
            (
                "import socket\ns = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
                "c = socket.create_connection(s.getsockname(), timeout=2); print('own loopback')"
            ),
        )
        assert isolated.startswith("blocked"), isolated
        assert net_none.startswith("blocked"), net_none
        assert net_open == "connected\n"
        assert net_default == "connected\n"
        assert own_lo == "own loopback\n"

    run([PY, NET], body)


def test_a_recycled_net_namespace_carries_nothing_over() -> None:
    listen = (
        "import socket, os\n"
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
        "u = socket.socket(socket.AF_UNIX); u.bind('\\0collimate-left-behind'); u.listen()\n"
        "print(s.getsockname()[1], flush=True)\n"
        "if os.fork() == 0:\n"
        "    import time; time.sleep(60)\n"
    )

    async def body(engine: ForkEngine) -> None:
        for _ in range(3):  # enough rounds for a namespace to be handed on
            first = await engine.open_clone(PY, egress=None)
            out = await first.run(ExecJob("code", listen, SEED, 20.0))
            port = int(out.output.split()[0])
            await first.close()
            _, probe = await once(
                engine,
                PY,
                (
                    "import socket\nfor fam, addr in ((socket.AF_INET, ('127.0.0.1', "
                    f"{port})), (socket.AF_UNIX, '\\0collimate-left-behind')):\n"
                    "    s = socket.socket(fam); s.settimeout(2)\n"
                    "    try:\n        s.connect(addr); print('REACHED')\n"
                    "    except OSError:\n        print('gone')\n"
                ),
            )
            assert probe == "gone\ngone\n"
        assert engine._netns_free  # namespaces really were recycled

    run([PY], body)
