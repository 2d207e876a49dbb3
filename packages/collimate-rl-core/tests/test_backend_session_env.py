"""Per-session env for an app template's server (``POST /v1/sessions {"env"}``):
the variables reach the server of a clone started for the session, are
answered by name, and are refused (never dropped) where they cannot arrive."""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
import urllib.request
from collections.abc import Iterator

import pytest

from collimate_rl import CollimateError, connect, connect_async
from collimate_rl.local_backend import LocalCollimateBackend

# A server answering GET with its COLLIMATE_T_* variables as JSON.
_SERVER = """
import http.server, json, os, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({k: v for k, v in os.environ.items() if k.startswith("COLLIMATE_T_")})
        self.send_response(200); self.end_headers(); self.wfile.write(body.encode())
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""
_COMMAND = f"{shlex.quote(sys.executable)} -c {shlex.quote(_SERVER)} {{port}}"
TEMPLATES = [
    {"id": "envapp", "kind": "app", "command": _COMMAND, "ports": [8000], "ready_http": "/"},
    {
        "id": "warmapp",
        "kind": "app",
        "command": _COMMAND,
        "ports": [8000],
        "ready_http": "/",
        "warm_pool": 1,
    },
]


@pytest.fixture(scope="module", params=["process", "auto"])
def backend(request: pytest.FixtureRequest) -> Iterator[LocalCollimateBackend]:
    with LocalCollimateBackend(templates=TEMPLATES, isolation=request.param) as b:
        yield b


def _served_env(endpoint: str) -> dict[str, str]:
    with urllib.request.urlopen(f"http://{endpoint}/", timeout=10) as resp:  # loopback
        return dict(json.loads(resp.read()))


def test_env_reaches_the_server_and_is_answered_by_name(backend: LocalCollimateBackend) -> None:
    client = connect(backend.base_url)
    env = {"COLLIMATE_T_A": "one", "COLLIMATE_T_B": "two words = ok"}
    s = client.create_session("envapp", env=env)
    try:
        assert s["env"] == ["COLLIMATE_T_A", "COLLIMATE_T_B"]
        assert _served_env(s["endpoints"]["8000"]) == env
        plain = client.create_session("envapp")
        try:
            assert "env" not in plain
            assert _served_env(plain["endpoints"]["8000"]) == {}  # nothing carried over
        finally:
            client.delete_session(plain["session_id"])
    finally:
        client.delete_session(s["session_id"])
    assert client.list_sessions() == []


@pytest.mark.parametrize(
    ("template", "env", "message"),
    [
        ("warmapp", {"COLLIMATE_T_A": "x"}, "keeps warm servers"),
        ("py", {"COLLIMATE_T_A": "x"}, "runs no server"),
        ("envapp", {"1BAD": "x"}, "not a variable name"),
        ("envapp", {"A=B": "x"}, "not a variable name"),
        ("envapp", {"COLLIMATE_T_A": 3}, "must be a string"),
        ("envapp", {"COLLIMATE_T_A": "a\x00b"}, "without NUL"),
        ("envapp", ["COLLIMATE_T_A"], "must be an object"),
        ("envapp", {"COLLIMATE_T_A": "x" * 70000}, "at most"),
    ],
)
def test_env_that_cannot_arrive_is_refused(
    backend: LocalCollimateBackend, template: str, env: object, message: str
) -> None:
    client = connect(backend.base_url)
    with pytest.raises(CollimateError, match=message) as info:
        client.create_session(template, env=env)  # type: ignore[arg-type]
    assert info.value.status == 400
    assert client.list_sessions() == []


def test_an_empty_env_is_no_env(backend: LocalCollimateBackend) -> None:
    client = connect(backend.base_url)
    s = client.create_session("warmapp", env={})
    try:
        assert "env" not in s
    finally:
        client.delete_session(s["session_id"])


def test_the_async_client_sends_env_too(backend: LocalCollimateBackend) -> None:
    async def body() -> None:
        async with connect_async(backend.base_url) as client:
            s = await client.create_session("envapp", env={"COLLIMATE_T_C": "3"})
            try:
                assert s["env"] == ["COLLIMATE_T_C"]
                assert _served_env(s["endpoints"]["8000"]) == {"COLLIMATE_T_C": "3"}
            finally:
                await client.delete_session(s["session_id"])

    asyncio.run(body())
