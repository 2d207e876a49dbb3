"""Capacity, drain, idle reaping and client disconnects against a real
server: the parts of the local backend that decide what is still running."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from collimate_rl.local_backend import LocalCollimateBackend


def _procs_with(token: str) -> list[int]:
    """Pids whose command line contains ``token`` (host /proc sees every
    process, sandboxed or not)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if token in cmdline and int(entry) != os.getpid():
            found.append(int(entry))
    return found


def _wait_for(pred: object, timeout_s: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if pred():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def _token() -> str:
    """A unique sleep duration that identifies one test's processes."""
    return f"{700 + (os.getpid() % 97)}.{time.monotonic_ns() % 10**6:06d}"


@pytest.fixture
def backend() -> Iterator[LocalCollimateBackend]:
    with LocalCollimateBackend(isolation="process", max_inflight=2) as b:
        yield b


def _post_in_thread(
    url: str, body: dict[str, object], out: list[httpx.Response]
) -> threading.Thread:
    def run() -> None:
        out.append(httpx.post(url, json=body, timeout=60))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_at_capacity_before_any_work(backend: LocalCollimateBackend) -> None:
    token = _token()
    url = backend.base_url + "/v1/exec"
    results: list[httpx.Response] = []
    threads = [
        _post_in_thread(
            url, {"template_id": "sh", "command": f"sleep {token}", "timeout_seconds": 2}, results
        )
        for _ in range(2)
    ]
    assert _wait_for(lambda: backend.health()["inflight"] == 2)
    r = httpx.post(url, json={"template_id": "sh", "command": "echo never"})
    assert r.status_code == 503 and r.json()["error_code"] == "at_capacity"
    created = httpx.post(backend.base_url + "/v1/sessions", json={"template_id": "sh"})
    assert created.status_code == 503 and created.json()["error_code"] == "at_capacity"
    assert backend.health()["sessions"] == 0  # refused before forking
    for t in threads:
        t.join(30)
    assert [x.json()["exit_code"] for x in results] == [-1, -1]
    assert not _procs_with(token)
    ok = httpx.post(url, json={"template_id": "sh", "command": "echo again"})
    assert ok.json()["stdout"] == "again\n"


def test_client_disconnect_mid_exec_kills_the_exec(backend: LocalCollimateBackend) -> None:
    token = _token()
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            backend.base_url + "/v1/exec",
            json={"template_id": "sh", "command": f"sleep {token}", "timeout_seconds": 600},
            timeout=httpx.Timeout(60, read=1.5),
        )
    # the client closed its connection on the timeout: the exec must die
    assert _wait_for(lambda: not _procs_with(token)), "exec survived its client"
    assert _wait_for(lambda: backend.health()["inflight"] == 0)


def test_client_disconnect_in_session_keeps_session(backend: LocalCollimateBackend) -> None:
    token = _token()
    with httpx.Client(base_url=backend.base_url, timeout=30) as c:
        sid = c.post("/v1/sessions", json={"template_id": "sh"}).json()["session_id"]
        with pytest.raises(httpx.ReadTimeout):
            c.post(
                f"/v1/sessions/{sid}/exec",
                json={"command": f"sleep {token}"},
                timeout=httpx.Timeout(30, read=1.5),
            )
        assert _wait_for(lambda: not _procs_with(token))
        again = c.post(f"/v1/sessions/{sid}/exec", json={"command": "echo alive"}).json()
        assert again["stdout"] == "alive\n"
        c.delete(f"/v1/sessions/{sid}")


def test_delete_during_exec_answers_session_gone(backend: LocalCollimateBackend) -> None:
    token = _token()
    sid = httpx.post(backend.base_url + "/v1/sessions", json={"template_id": "sh"}).json()[
        "session_id"
    ]
    out: list[httpx.Response] = []
    t = _post_in_thread(
        f"{backend.base_url}/v1/sessions/{sid}/exec", {"command": f"sleep {token}"}, out
    )
    assert _wait_for(lambda: bool(_procs_with(token)))
    d = httpx.delete(f"{backend.base_url}/v1/sessions/{sid}")
    assert d.json() == {"deleted": True, "session_id": sid}
    t.join(30)
    assert out[0].status_code == 410 and out[0].json()["error_code"] == "session_gone"
    assert not _procs_with(token)


def test_idle_sessions_are_reaped_then_forgotten() -> None:
    with LocalCollimateBackend(isolation="process", session_ttl=0.3, tombstone_ttl=4.0) as b:
        c = httpx.Client(base_url=b.base_url, timeout=30)
        sid = c.post("/v1/sessions", json={"template_id": "sh"}).json()["session_id"]
        assert _wait_for(lambda: c.get(f"/v1/sessions/{sid}").status_code == 410, 10)
        gone = c.post(f"/v1/sessions/{sid}/exec", json={"command": "true"})
        assert gone.status_code == 410 and gone.json()["error_code"] == "session_gone"
        assert b.health()["sessions"] == 0
        assert _wait_for(lambda: c.get(f"/v1/sessions/{sid}").status_code == 404, 30)
        assert c.get(f"/v1/sessions/{sid}").json()["error_code"] == "no_such_session"
        c.close()


def test_busy_session_is_not_reaped() -> None:
    with LocalCollimateBackend(isolation="process", session_ttl=0.3) as b:
        c = httpx.Client(base_url=b.base_url, timeout=30)
        sid = c.post("/v1/sessions", json={"template_id": "sh"}).json()["session_id"]
        r = c.post(f"/v1/sessions/{sid}/exec", json={"command": "sleep 1.2; echo done"})
        assert r.status_code == 200 and r.json()["stdout"] == "done\n"
        c.close()


def test_drain_lets_inflight_finish_and_refuses_new_work() -> None:
    b = LocalCollimateBackend(isolation="process").start()
    try:
        url = b.base_url
        sid = httpx.post(url + "/v1/sessions", json={"template_id": "sh"}).json()["session_id"]
        out: list[httpx.Response] = []
        t = _post_in_thread(
            url + "/v1/exec", {"template_id": "sh", "command": "sleep 4; echo finished"}, out
        )
        assert _wait_for(lambda: b.health()["running"] == 1)
        b.drain()
        assert _wait_for(lambda: b.health()["status"] == "draining")
        with httpx.Client(base_url=url) as c:
            for method, path, body in [
                ("POST", "/v1/exec", {"template_id": "sh", "command": "true"}),
                ("POST", "/v1/sessions", {"template_id": "sh"}),
                ("POST", f"/v1/sessions/{sid}/exec", {"command": "true"}),
            ]:
                r = c.request(method, path, json=body)
                assert r.status_code == 503 and r.json()["error_code"] == "draining", r.text
            assert c.get("/v1/health").json()["status"] == "draining"
        t.join(30)
        assert out[0].status_code == 200 and out[0].json()["stdout"] == "finished\n"
        assert b.wait_stopped(timeout_s=30)
    finally:
        b.stop()


def _raw_request(sock: socket.socket, method: str, path: str, body: bytes = b"") -> bytes:
    """Send one HTTP/1.1 request on ``sock`` (kept alive) and read its whole
    answer: the raw bytes, so the ``Connection`` header can be checked."""
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    sock.sendall(head.encode() + body)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"the server closed the connection without an answer: {data!r}"
        data += chunk
    head_bytes, _, rest = data.partition(b"\r\n\r\n")
    length = int(
        next(
            line.split(b":", 1)[1]
            for line in head_bytes.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
    )
    while len(rest) < length:
        chunk = sock.recv(65536)
        assert chunk
        rest += chunk
    return head_bytes + b"\r\n\r\n" + rest


def test_a_request_on_a_keep_alive_connection_idle_at_drain_is_answered_draining() -> None:
    """A drain does not close idle keep-alive connections under their
    clients (a request written as the close lands could not be told from a
    crash mid-exec): the request is answered ``draining``, with
    ``Connection: close``, and only then does the connection end."""
    b = LocalCollimateBackend(isolation="process", drain_linger_s=30.0).start()
    try:
        host, port = b.base_url.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            assert b" 200 " in _raw_request(sock, "GET", "/v1/health").split(b"\r\n")[0]
            b.drain()  # the connection is idle, kept alive
            assert _wait_for(lambda: b.health()["status"] == "draining")
            time.sleep(0.3)  # (a close, were there one, would have landed)
            body = b'{"template_id": "sh", "command": "echo ran"}'
            answer = _raw_request(sock, "POST", "/v1/exec", body)
            status, *headers = answer.partition(b"\r\n\r\n")[0].split(b"\r\n")
            assert b" 503 " in status and b'"draining"' in answer and b"ran" not in answer
            assert b"connection: close" in [h.lower() for h in headers]
            assert sock.recv(1) == b""  # then the server ends it
        assert b.wait_stopped(timeout_s=20)  # no client left: no need to linger
    finally:
        b.stop()


def test_a_drain_stops_within_its_linger_when_a_client_keeps_an_idle_connection() -> None:
    b = LocalCollimateBackend(isolation="process", drain_linger_s=1.0).start()
    try:
        host, port = b.base_url.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            _raw_request(sock, "GET", "/v1/health")
            started = time.monotonic()
            b.drain()
            assert b.wait_stopped(timeout_s=20)
            assert 0.9 <= time.monotonic() - started < 15
            assert sock.recv(1) == b""  # closed by the stop, unused
    finally:
        b.stop()


def test_stop_with_work_in_flight_kills_it() -> None:
    token = _token()
    b = LocalCollimateBackend(isolation="process").start()
    out: list[BaseException] = []

    def run() -> None:
        try:
            httpx.post(
                b.base_url + "/v1/exec",
                json={"template_id": "sh", "command": f"sleep {token}", "timeout_seconds": 600},
                timeout=120,
            )
        except httpx.TransportError as exc:
            out.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    try:
        assert _wait_for(lambda: bool(_procs_with(token)))
    finally:
        b.stop()
    t.join(60)
    assert out and isinstance(out[0], httpx.RemoteProtocolError | httpx.ReadError)
    assert not _procs_with(token)
