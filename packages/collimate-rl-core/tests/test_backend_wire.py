"""The daemon wire (docs/wire.md §1-2) of the local backend, against a real server
on loopback and on a unix socket: routes, bodies, statuses, error codes."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from collimate_rl.local_backend import LocalCollimateBackend

SEED = "ab" * 32


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with LocalCollimateBackend(isolation="process") as b:
        yield b


@pytest.fixture
def client(backend: LocalCollimateBackend) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=backend.base_url, timeout=60) as c:
        yield c


def _err(r: httpx.Response) -> tuple[int, str]:
    body = r.json()
    assert set(body) == {"error", "error_code"}, body
    assert isinstance(body["error"], str) and body["error"]
    return r.status_code, body["error_code"]


def test_health_shape(client: httpx.Client) -> None:
    h = client.get("/v1/health").json()
    for key in ("status", "sessions", "running", "max_inflight", "queued", "templates", "version"):
        assert key in h
    assert h["status"] == "ok"
    assert {"py", "dkr-python311", "sh"} <= set(h["templates"])
    assert h["isolation"] in ("namespaces", "process")
    assert h["isolation_detail"]


def test_one_shot_exec_shape_and_merged_stderr(client: httpx.Client) -> None:
    r = client.post(
        "/v1/exec",
        json={"template_id": "sh", "command": "echo out; echo err >&2; exit 3", "id": "r1"},
    )
    assert r.status_code == 200
    body = r.json()
    assert body["stdout"] == "out\nerr\n"
    assert body["stderr"] == ""
    assert body["exit_code"] == 3
    assert body["id"] == "r1"
    assert re.fullmatch(r"[0-9a-f]{64}", body["seed"])
    assert body["seed_ack"] in ("verified", "off", "no-ack")
    for key in ("fork_time_ms", "exec_time_ms", "total_time_ms"):
        assert isinstance(body[key], float | int) and body[key] >= 0


def test_seed_echoed_and_random_seeded(client: httpx.Client) -> None:
    code = "import random\nprint(random.random(), random.randint(0, 10**9))"
    a = client.post("/v1/exec", json={"template_id": "py", "code": code, "seed": SEED}).json()
    b = client.post("/v1/exec", json={"template_id": "py", "code": code, "seed": SEED}).json()
    assert a["seed"] == SEED and b["seed"] == SEED
    assert a["stdout"] == b["stdout"] and a["exit_code"] == 0
    import random

    rng = random.Random(int(SEED, 16))
    assert a["stdout"].split() == [repr(rng.random()), str(rng.randint(0, 10**9))]
    fresh = [
        client.post("/v1/exec", json={"template_id": "py", "code": "1"}).json()["seed"]
        for _ in range(2)
    ]
    assert fresh[0] != fresh[1]


def test_precedence_command_over_commands_over_code(client: httpx.Client) -> None:
    both = {
        "template_id": "py",
        "command": "echo C",
        "commands": [["echo", "L"]],
        "code": "print('P')",
    }
    assert client.post("/v1/exec", json=both).json()["stdout"] == "C\n"
    del both["command"]
    assert client.post("/v1/exec", json=both).json()["stdout"] == "L\n"
    del both["commands"]
    assert client.post("/v1/exec", json=both).json()["stdout"] == "P\n"


def test_commands_are_quoted_and_joined(client: httpx.Client) -> None:
    cmds = [["printf", "%s|", "a b", "$HOME", "it's"], ["echo"], ["sh", "-c", "exit 4"]]
    body = client.post("/v1/exec", json={"template_id": "sh", "commands": cmds}).json()
    assert body["stdout"] == "a b|$HOME|it's|\n"
    assert body["exit_code"] == 4


def test_files_written_as_text_with_trailing_newline(client: httpx.Client) -> None:
    files = [
        {"path": "a.txt", "content": "no newline"},
        {"path": "b.txt", "content": "one\n"},
        {"path": "sub/dir/c.txt", "content": "deep"},
    ]
    body = client.post(
        "/v1/exec",
        json={
            "template_id": "sh",
            "command": "wc -c < a.txt; wc -c < b.txt; cat sub/dir/c.txt",
            "files": files,
        },
    ).json()
    assert body["exit_code"] == 0, body
    assert body["stdout"].split() == ["11", "4", "deep"]


def test_timeout_is_minus_one_with_message(client: httpx.Client) -> None:
    body = client.post(
        "/v1/exec",
        json={"template_id": "sh", "command": "echo started; sleep 30", "timeout_seconds": 1},
    ).json()
    assert body["exit_code"] == -1
    assert "timeout after 1" in body["stdout"]


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"code": "1"}, 400, "template_id_required"),
        ({"template_id": "", "code": "1"}, 400, "template_id_required"),
        ({"template_id": "nope", "code": "1"}, 404, "no_template"),
        ({"template_id": "py"}, 400, "bad_request"),
        ({"template_id": "py", "code": 5}, 400, "bad_request"),
        ({"template_id": "py", "commands": [[]]}, 400, "bad_request"),
        ({"template_id": "py", "code": "1", "seed": "xyz"}, 400, "invalid_seed"),
        ({"template_id": "py", "code": "1", "seed": "g" * 64}, 400, "invalid_seed"),
        ({"template_id": "py", "code": "1", "seed": "ab" * 32 + "\n"}, 400, "invalid_seed"),
        ({"template_id": "py", "code": "1", "seed": 12}, 400, "invalid_seed"),
        ({"template_id": "py", "code": "1", "timeout_seconds": 3601}, 400, "bad_request"),
        ({"template_id": "py", "code": "1", "timeout_seconds": 0}, 400, "bad_request"),
        ({"template_id": "py", "code": "1", "files": [{"path": "x"}]}, 400, "bad_request"),
        ({"template_id": "py", "code": "1", "egress": {"mode": "none"}}, 400, "bad_request"),
    ],
)
def test_exec_error_codes(
    client: httpx.Client, body: dict[str, object], status: int, code: str
) -> None:
    assert _err(client.post("/v1/exec", json=body)) == (status, code)


def test_vsock_only_message(client: httpx.Client) -> None:
    r = client.post("/v1/sessions", json={"template_id": "py", "egress": {"mode": "open"}})
    assert r.status_code == 400
    assert r.json()["error"] == "template is vsock-only"


def test_max_timeout_accepted(client: httpx.Client) -> None:
    r = client.post(
        "/v1/exec", json={"template_id": "sh", "command": "true", "timeout_seconds": 3600}
    )
    assert r.status_code == 200


def test_bad_json_and_unknown_route(client: httpx.Client) -> None:
    assert _err(client.post("/v1/exec", content=b"{nope")) == (400, "bad_request")
    assert _err(client.post("/v1/exec", content=b"[1]")) == (400, "bad_request")
    assert _err(client.get("/v1/nothing")) == (404, "not_found")
    assert _err(client.put("/v1/health")) == (404, "not_found")


def test_session_lifecycle(client: httpx.Client) -> None:
    r = client.post("/v1/sessions", json={"template_id": "sh"})
    assert r.status_code == 201
    created = r.json()
    sid = created["session_id"]
    assert created["template_id"] == "sh"
    assert created["fork_time_ms"] >= 0 and created["create_time_ms"] >= 0
    assert "endpoints" not in created

    first = client.post(f"/v1/sessions/{sid}/exec", json={"command": "echo kept > state.txt"})
    assert first.status_code == 200 and first.json()["exit_code"] == 0
    second = client.post(f"/v1/sessions/{sid}/exec", json={"command": "cat state.txt"}).json()
    assert second["stdout"] == "kept\n"

    info = client.get(f"/v1/sessions/{sid}").json()
    assert info["session_id"] == sid and info["template_id"] == "sh"
    assert info["exec_count"] == 2
    assert info["age_secs"] >= info["idle_secs"] >= 0
    assert sid in [s["session_id"] for s in client.get("/v1/sessions").json()]
    assert client.get("/v1/health").json()["sessions"] >= 1

    d = client.delete(f"/v1/sessions/{sid}")
    assert d.status_code == 200 and d.json() == {"deleted": True, "session_id": sid}
    again = client.delete(f"/v1/sessions/{sid}")
    assert again.status_code == 404 and again.json() == {"deleted": False, "session_id": sid}
    assert _err(client.get(f"/v1/sessions/{sid}")) == (404, "no_such_session")
    assert _err(client.post(f"/v1/sessions/{sid}/exec", json={"command": "true"})) == (
        404,
        "no_such_session",
    )
    assert sid not in [s["session_id"] for s in client.get("/v1/sessions").json()]


def test_session_errors(client: httpx.Client) -> None:
    assert _err(client.post("/v1/sessions", json={})) == (400, "template_id_required")
    assert _err(client.post("/v1/sessions", json={"template_id": "zzz"})) == (404, "no_template")
    assert _err(client.get("/v1/sessions/sess_nope")) == (404, "no_such_session")
    sid = client.post("/v1/sessions", json={"template_id": "py"}).json()["session_id"]
    try:
        bad = client.post(f"/v1/sessions/{sid}/exec", json={"code": "1", "seed": "12"})
        assert _err(bad) == (400, "invalid_seed")
        assert _err(client.post(f"/v1/sessions/{sid}/exec", json={})) == (400, "bad_request")
        body = client.post(
            f"/v1/sessions/{sid}/exec", json={"code": "print(2+2)", "seed": SEED}
        ).json()
        assert body["stdout"] == "4\n" and body["seed"] == SEED
    finally:
        client.delete(f"/v1/sessions/{sid}")


def test_keep_alive_reuses_one_connection(backend: LocalCollimateBackend) -> None:
    """Many requests over one raw socket: the server must keep it open."""
    host, port = "127.0.0.1", backend.port
    assert port is not None
    with socket.create_connection((host, port), timeout=30) as s:
        for _ in range(5):
            s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
            data = b""
            while b"\r\n\r\n" not in data:
                data += s.recv(65536)
            head, _, rest = data.partition(b"\r\n\r\n")
            length = int(re.search(rb"content-length: (\d+)", head, re.I).group(1))  # type: ignore[union-attr]
            while len(rest) < length:
                rest += s.recv(65536)
            assert head.startswith(b"HTTP/1.1 200")


def test_unix_socket_and_tcp_at_once(tmp_path: object) -> None:
    import pathlib

    path = pathlib.Path(str(tmp_path)) / "serve.sock"
    with LocalCollimateBackend(isolation="process", socket_path=path) as b:
        assert b.socket_path == str(path) and path.exists()
        transport = httpx.HTTPTransport(uds=str(path))
        with httpx.Client(transport=transport, base_url="http://local", timeout=30) as uc:
            assert uc.get("/v1/health").json()["status"] == "ok"
            body = uc.post(
                "/v1/exec", json={"template_id": "sh", "command": "echo via-unix"}
            ).json()
            assert body["stdout"] == "via-unix\n"
        assert httpx.get(b.base_url + "/v1/health").status_code == 200
    assert not path.exists()


def test_unix_socket_only(tmp_path: object) -> None:
    import pathlib

    path = pathlib.Path(str(tmp_path)) / "only.sock"
    with LocalCollimateBackend(isolation="process", port=None, socket_path=path) as b:
        assert b.port is None
        with pytest.raises(RuntimeError):
            _ = b.base_url
        with httpx.Client(transport=httpx.HTTPTransport(uds=str(path)), base_url="http://x") as uc:
            assert uc.get("/v1/health").status_code == 200
    assert not path.exists()


def test_admin_drain_stops_the_server() -> None:
    b = LocalCollimateBackend(isolation="process").start()
    try:
        r = httpx.post(b.base_url + "/v1/admin/drain")
        assert r.status_code == 202 and r.json()["status"] == "draining"
        assert b.wait_stopped(timeout_s=30)
        with pytest.raises(httpx.ConnectError):
            httpx.get(b.base_url + "/v1/health")
    finally:
        b.stop()


def test_in_process_health_and_restart() -> None:
    b = LocalCollimateBackend(isolation="process")
    with b:
        assert b.health()["status"] == "ok"
        first = b.base_url
    b.stop()  # idempotent
    with b:
        assert b.health()["status"] == "ok"
        assert b.base_url.startswith("http://127.0.0.1:")
    assert first.startswith("http://127.0.0.1:")


def test_peer_style_templates_argument() -> None:
    """The earlier release's ``templates={"py": {"interpreter": ...}}`` shape."""
    import sys

    with LocalCollimateBackend({"py": {"interpreter": sys.executable}}, isolation="process") as b:
        r = httpx.post(b.base_url + "/v1/exec", json={"template_id": "py", "code": "print('ok')"})
        assert r.json()["stdout"] == "ok\n"


def test_started_at_reports_isolation_not_more(backend: LocalCollimateBackend) -> None:
    h = backend.health()
    if h["isolation"] == "process":
        assert "not a sandbox" in h["isolation_detail"].lower()
        assert h["sandbox"] is False
    time.sleep(0)  # health is read on the server's loop without HTTP
