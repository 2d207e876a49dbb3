"""The HTTP layer of the local backend: pipelining, oversized and malformed
requests, and a bring-up failure that leaves nothing behind."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.local_backend.config import ServerConfig


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCollimateBackend]:
    tpl = tmp_path_factory.mktemp("tpl") / "t.toml"
    tpl.write_text(
        '[[templates]]\nid = "never-ready"\nkind = "app"\n'
        'command = "sleep 600 # {port}"\nports = [80]\nready_http = "/"\nready_timeout_s = 1\n'
    )
    b = LocalCollimateBackend(templates_file=tpl)
    b.config.max_body_bytes = 4096
    with b:
        yield b


def _read_responses(sock: socket.socket, n: int) -> list[tuple[int, bytes]]:
    buf = b""
    out: list[tuple[int, bytes]] = []
    while len(out) < n:
        while b"\r\n\r\n" not in buf:
            chunk = sock.recv(65536)
            if not chunk:
                return out
            buf += chunk
        head, _, buf = buf.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        while len(buf) < length:
            buf += sock.recv(65536)
        out.append((status, buf[:length]))
        buf = buf[length:]
    return out


def test_pipelined_requests_answered_in_order(backend: LocalCollimateBackend) -> None:
    assert backend.port is not None
    body = json.dumps({"template_id": "sh", "command": "echo one"}).encode()
    req = (
        b"POST /v1/exec HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )
    with socket.create_connection(("127.0.0.1", backend.port), timeout=30) as s:
        s.sendall(req + b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n" + req)
        answers = _read_responses(s, 3)
    assert [a[0] for a in answers] == [200, 200, 200]
    assert json.loads(answers[0][1])["stdout"] == "one\n"
    assert json.loads(answers[1][1])["status"] == "ok"


def test_expect_100_continue(backend: LocalCollimateBackend) -> None:
    assert backend.port is not None
    body = json.dumps({"template_id": "sh", "command": "echo cont"}).encode()
    head = (
        b"POST /v1/exec HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", backend.port), timeout=30) as s:
        s.sendall(head)
        interim = s.recv(65536)
        assert interim.startswith(b"HTTP/1.1 100"), interim
        s.sendall(body)
        (answer,) = _read_responses(s, 1)
    assert answer[0] == 200 and json.loads(answer[1])["stdout"] == "cont\n"


def test_oversized_body_is_refused(backend: LocalCollimateBackend) -> None:
    r = httpx.post(
        backend.base_url + "/v1/exec",
        json={"template_id": "sh", "command": "echo " + "x" * 10000},
    )
    assert r.status_code == 413
    assert r.json()["error_code"] == "bad_request"


def test_malformed_http_is_a_400(backend: LocalCollimateBackend) -> None:
    assert backend.port is not None
    with socket.create_connection(("127.0.0.1", backend.port), timeout=30) as s:
        s.sendall(b"THIS IS NOT HTTP\r\n\r\n")
        answers = _read_responses(s, 1)
    assert answers and answers[0][0] == 400
    assert json.loads(answers[0][1])["error_code"] == "bad_request"
    assert httpx.get(backend.base_url + "/v1/health").status_code == 200


def test_bringup_failure_is_retry_safe_503(backend: LocalCollimateBackend) -> None:
    r = httpx.post(
        backend.base_url + "/v1/sessions", json={"template_id": "never-ready"}, timeout=60
    )
    assert r.status_code == 503
    assert r.json()["error_code"] == "session_bringup_failed"
    assert backend.health()["sessions"] == 0
    assert backend.health()["inflight"] == 0


def test_config_validation(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="nothing to listen on"):
        ServerConfig(port=None)
    with pytest.raises(ValueError, match="isolation"):
        ServerConfig(isolation="vm")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_inflight"):
        ServerConfig(max_inflight=-1)


def test_socket_path_in_use_or_not_a_socket(tmp_path: Path) -> None:
    path = tmp_path / "s.sock"
    second = LocalCollimateBackend(port=None, socket_path=path)
    with (
        LocalCollimateBackend(port=None, socket_path=path),
        pytest.raises(OSError, match="another server"),
    ):
        second.start()
    path.write_text("a file")
    with pytest.raises(OSError, match="not a socket"):
        LocalCollimateBackend(port=None, socket_path=path).start()
    assert path.read_text() == "a file"


def test_stale_socket_file_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "stale.sock"
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(path))
    dead.close()  # the file stays, nobody listens
    with LocalCollimateBackend(port=None, socket_path=path) as b:
        assert b.socket_path == str(path)
    assert not path.exists()


def test_idle_keepalive_connection_is_closed() -> None:
    b = LocalCollimateBackend(isolation="process")
    b.config.idle_connection_timeout_s = 0.3
    with b, socket.create_connection(("127.0.0.1", b.port or 0), timeout=30) as s:
        s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _read_responses(s, 1)[0][0] == 200
        assert s.recv(65536) == b""  # the server hung up on the idle connection
