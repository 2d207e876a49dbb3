"""App templates (a server command, ports, HTTP readiness, ``endpoints``) and
egress policies on networked templates, through the daemon wire."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from collimate_rl.local_backend import LocalCollimateBackend

TEMPLATES = """
[[templates]]
id = "web"
kind = "app"
command = "python3 -m http.server {port} --bind 127.0.0.1"
ports = [8000]
ready_http = "/"
warm_pool = 1

[[templates]]
id = "netsh"
kind = "shell"
networked = true
"""


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCollimateBackend]:
    path = tmp_path_factory.mktemp("tpl") / "templates.toml"
    path.write_text(TEMPLATES)
    with LocalCollimateBackend(templates_file=path) as b:
        yield b


def test_app_template_endpoints(backend: LocalCollimateBackend) -> None:
    with httpx.Client(base_url=backend.base_url, timeout=60) as c:
        r = c.post("/v1/sessions", json={"template_id": "web"})
        assert r.status_code == 201, r.text
        created = r.json()
        endpoints = created["endpoints"]
        assert set(endpoints) == {"8000"}
        host, _, port = endpoints["8000"].rpartition(":")
        assert host == "127.0.0.1" and int(port) > 0
        assert httpx.get(f"http://{endpoints['8000']}/", timeout=30).status_code == 200
        other = c.post("/v1/sessions", json={"template_id": "web"}).json()
        assert other["endpoints"]["8000"] != endpoints["8000"]  # one server per session
        for sid in (created["session_id"], other["session_id"]):
            assert c.delete(f"/v1/sessions/{sid}").json()["deleted"] is True
        with pytest.raises(httpx.TransportError):
            httpx.get(f"http://{endpoints['8000']}/", timeout=5)


@pytest.mark.parametrize(
    ("policy", "requested", "enforced"),
    [
        ({"mode": "none"}, "none", "none"),
        ({"mode": "open"}, "open", "open"),
        ({}, "open", "open"),
        ({"allow": ["pypi.org"]}, "allowlist", "none"),
        ({"mode": "allowlist", "allow": []}, "allowlist", "none"),
    ],
)
def test_egress_on_networked_template(
    backend: LocalCollimateBackend, policy: dict[str, object], requested: str, enforced: str
) -> None:
    r = httpx.post(
        backend.base_url + "/v1/exec",
        json={"template_id": "netsh", "command": "echo hi", "egress": policy},
        timeout=60,
    )
    assert r.status_code == 200, r.text
    assert r.json()["stdout"] == "hi\n"
    assert r.json()["egress"]["requested"] == requested
    assert r.json()["egress"]["enforced"] == enforced
    s = httpx.post(
        backend.base_url + "/v1/sessions", json={"template_id": "netsh", "egress": policy}
    )
    assert s.status_code == 201 and s.json()["egress"]["enforced"] == enforced
    httpx.delete(f"{backend.base_url}/v1/sessions/{s.json()['session_id']}")


@pytest.mark.parametrize(
    "policy", [{"preset": "rl-leakage"}, {"deny": ["x.com"]}, {"mode": "denylist"}]
)
def test_denylist_is_refused_honestly(
    backend: LocalCollimateBackend, policy: dict[str, object]
) -> None:
    r = httpx.post(
        backend.base_url + "/v1/exec",
        json={"template_id": "netsh", "command": "true", "egress": policy},
    )
    assert r.status_code == 400
    assert r.json()["error_code"] == "bad_request"
    assert "cannot be enforced" in r.json()["error"]


def test_egress_only_at_session_create(backend: LocalCollimateBackend) -> None:
    with httpx.Client(base_url=backend.base_url) as c:
        sid = c.post("/v1/sessions", json={"template_id": "netsh"}).json()["session_id"]
        r = c.post(f"/v1/sessions/{sid}/exec", json={"command": "true", "egress": {"mode": "none"}})
        assert r.status_code == 400 and r.json()["error_code"] == "bad_request"
        c.delete(f"/v1/sessions/{sid}")


def test_async_context_manager(tmp_path: Path) -> None:
    async def main() -> str:
        backend = LocalCollimateBackend(socket_path=tmp_path / "a.sock")
        async with backend as b, httpx.AsyncClient(base_url=b.base_url) as c:
            r = await c.post("/v1/exec", json={"template_id": "sh", "command": "echo async"})
            return str(r.json()["stdout"])

    assert asyncio.run(main()) == "async\n"
    assert not (tmp_path / "a.sock").exists()
