"""Isolation through the real local backend (HTTP on loopback, namespaces):
sessions cannot reach each other's files or write the host's; egress ``none``
means no network (probed only against a listener on the host's 127.0.0.1);
a fork bomb, a memory bomb, an infinite loop and 100 MB of output each end
with a clear result while the server stays healthy and a neighbour session is
unaffected; nothing of a timed-out exec survives."""

from __future__ import annotations

import concurrent.futures
import os
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.testing.engine import namespaced_backend

pytestmark = pytest.mark.namespaces

TEMPLATES = [
    {"id": "py", "kind": "python"},
    {"id": "net", "kind": "python", "networked": True},
    {
        "id": "tight",
        "kind": "python",
        "limits": {"processes": 64, "memory": "256MiB", "cpu_seconds": 20},
    },
]


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with namespaced_backend(TEMPLATES, use_plugins=False) as server:
        yield server


@pytest.fixture
def http(backend: LocalCollimateBackend) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=backend.base_url, timeout=120) as client:
        yield client


def exec_once(
    http: httpx.Client, template: str, code: str, timeout: int = 20, **extra: Any
) -> dict[str, Any]:
    resp = http.post(
        "/v1/exec",
        json={"template_id": template, "code": code, "timeout_seconds": timeout, **extra},
    )
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


class Session:
    def __init__(self, http: httpx.Client, template: str, **extra: Any) -> None:
        self.http = http
        resp = http.post("/v1/sessions", json={"template_id": template, **extra})
        assert resp.status_code == 201, resp.text
        self.id = resp.json()["session_id"]

    def run(self, code: str, timeout: int = 20, **extra: Any) -> dict[str, Any]:
        resp = self.http.post(
            f"/v1/sessions/{self.id}/exec", json={"code": code, "timeout_seconds": timeout, **extra}
        )
        assert resp.status_code == 200, resp.text
        return dict(resp.json())

    def delete(self) -> None:
        self.http.delete(f"/v1/sessions/{self.id}")


def test_health_states_namespaces(http: httpx.Client) -> None:
    body = http.get("/v1/health").json()
    assert body["status"] == "ok"
    assert body.get("isolation") == "namespaces"


def test_sessions_cannot_read_each_other_or_write_the_host(http: httpx.Client) -> None:
    repo_file = Path(__file__).resolve()
    etc_victim = f"/etc/collimate-iso-{uuid.uuid4().hex}"
    alice, bob = Session(http, "py"), Session(http, "py")
    try:
        wrote = alice.run(
            "import os\nopen('/tmp/alice.txt', 'w').write('alice secret')\nprint(os.getcwd())",
            files=[{"path": "notes.txt", "content": "alice notes"}],
        )
        assert wrote["exit_code"] == 0, wrote
        peek = bob.run(
            "import os\n"
            "print(os.path.exists('/tmp/alice.txt'), os.path.exists('notes.txt'))\n"
            "print(sorted(open(f'/proc/{p}/comm').read().strip()"
            " for p in os.listdir('/proc') if p.isdigit()))\n"
            f"for path in ({etc_victim!r}, {str(repo_file.parent / 'evil.txt')!r}, "
            f"{str(repo_file)!r}):\n"
            "    try:\n"
            "        open(path, 'a').write('x')\n"
            "        print('WROTE', path)\n"
            "    except OSError as exc:\n"
            "        print('refused', exc.errno)\n"
        )
        lines = peek["stdout"].splitlines()
        assert lines[0] == "False False"
        # bob sees none of alice's (or the host's) processes: his clone's
        # init, this exec, and its clean twin if a grade asked for twins before
        assert lines[1] in (
            "['collimate-clone', 'collimate-exec']",
            "['collimate-clone', 'collimate-exec', 'collimate-twin']",
        )
        assert lines[2:] == [line for line in lines[2:] if line.startswith("refused")]
        assert len(lines) == 5
        mine = alice.run("print(open('/tmp/alice.txt').read(), open('notes.txt').read())")
        assert mine["stdout"] == "alice secret alice notes\n\n"  # files get a trailing newline
    finally:
        alice.delete()
        bob.delete()
    assert not os.path.exists(etc_victim)
    assert not (repo_file.parent / "evil.txt").exists()


@pytest.fixture
def host_listener() -> Iterator[int]:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    try:
        yield int(srv.getsockname()[1])
    finally:
        srv.close()


def test_egress_none_means_no_network(http: httpx.Client, host_listener: int) -> None:
    probe = (
        "import socket\ns = socket.socket(); s.settimeout(2)\n"
        f"try:\n    s.connect(('127.0.0.1', {host_listener})); print('connected')\n"
        "except OSError as exc:\n    print('blocked', type(exc).__name__)\n"
    )
    vsock_only = exec_once(http, "py", probe)
    none = exec_once(http, "net", probe, egress={"mode": "none"})
    session_none = Session(http, "net", egress={"mode": "none"})
    try:
        in_session = session_none.run(probe)
    finally:
        session_none.delete()
    opened = exec_once(http, "net", probe, egress={"mode": "open"})
    assert vsock_only["stdout"].startswith("blocked"), vsock_only
    assert none["stdout"].startswith("blocked"), none
    assert in_session["stdout"].startswith("blocked"), in_session
    assert opened["stdout"] == "connected\n"


def test_bombs_end_cleanly_while_the_server_and_a_neighbour_carry_on(
    http: httpx.Client, backend: LocalCollimateBackend
) -> None:
    bombs = {
        "fork": "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n"
        "        pass",
        "memory": "chunks = []\nwhile True:\n    chunks.append(bytearray(16 << 20))",
        "loop": "while True:\n    pass",
        "output": "import sys\nblock = b'z' * (1 << 20)\nfor _ in range(100):\n"
        "    sys.stdout.buffer.write(block)\nsys.stdout.flush()\nprint('wrote all')",
    }
    neighbour = Session(http, "py")
    try:
        assert neighbour.run("x = 41\nprint(x + 1)")["stdout"] == "42\n"
        with concurrent.futures.ThreadPoolExecutor(len(bombs)) as pool:
            # (3 s each; the memory bomb must end in MemoryError and the
            # output bomb finish its 100 MiB, not time out, however loaded
            # the machine: they get longer. The output bomb takes well under
            # a second alone, but beside this fork bomb and a CI run's other
            # workers it once took more than 20 s, so it gets 60: a drain
            # that stopped would still block it until then)
            longer = {"memory": 20, "output": 60}
            futures = {
                name: pool.submit(exec_once, http, "tight", code, longer.get(name, 3))
                for name, code in bombs.items()
            }
            # the neighbour keeps working while the bombs go off
            during = neighbour.run("print('still fine')")
            results = {name: fut.result() for name, fut in futures.items()}
        assert during["stdout"] == "still fine\n"
        fork, memory, loop, output = (results[k] for k in ("fork", "memory", "loop", "output"))
        assert fork["exit_code"] == -1 and "timeout after" in fork["stdout"]
        assert memory["exit_code"] == 1 and "MemoryError" in memory["stdout"]
        assert loop["exit_code"] == -1 and "timeout after 3" in loop["stdout"]
        assert output["exit_code"] == 0 and output["truncated"] is True
        assert len(output["stdout"].encode()) == 16 * 1024 * 1024
        health = http.get("/v1/health").json()
        assert health["status"] == "ok"
        assert neighbour.run("print('after')")["stdout"] == "after\n"
    finally:
        neighbour.delete()


def _procs_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                if marker.encode() in fh.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def test_nothing_of_a_timed_out_exec_survives(http: httpx.Client) -> None:
    mark = f"{600 + os.getpid() % 97}.{time.monotonic_ns() % 10**9:09d}"
    command = (
        f"sleep {mark} & setsid sleep {mark} & (sleep {mark} &) ; "
        f"nohup sleep {mark} >/dev/null 2>&1 & sleep {mark}"
    )
    resp = http.post(
        "/v1/exec", json={"template_id": "py", "command": command, "timeout_seconds": 1}
    )
    body = resp.json()
    assert body["exit_code"] == -1 and "timeout after" in body["stdout"]
    assert _procs_with(mark) == []
    session = Session(http, "py")
    try:
        resp = http.post(
            f"/v1/sessions/{session.id}/exec", json={"command": command, "timeout_seconds": 1}
        )
        assert resp.json()["exit_code"] == -1
        assert _procs_with(mark) == []
    finally:
        session.delete()
