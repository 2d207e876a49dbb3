"""An app template that is not networked, through a real namespaced backend:
its session's endpoint is relayed into the clone's own net namespace, and a
connection open there keeps the session from being reaped as idle (a
browser driven only over CDP runs no exec for minutes)."""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.testing.engine import namespaced_backend

pytestmark = pytest.mark.namespaces

TTL_S = 3.0
WEB = {
    "id": "web-own-net",
    "kind": "app",
    "networked": False,
    "command": f"{sys.executable} -m http.server {{port}} --bind 127.0.0.1",
    "ports": [8000],
    "ready_http": "/",
}


def _wait_for(check: Callable[[], bool], within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with namespaced_backend([WEB], session_ttl=TTL_S, tombstone_ttl=60.0) as server:
        yield server


def test_an_open_relayed_connection_keeps_the_session_then_idleness_reaps_it(
    backend: LocalCollimateBackend,
) -> None:
    with httpx.Client(base_url=backend.base_url, timeout=60) as http:
        created = http.post("/v1/sessions", json={"template_id": WEB["id"]}).json()
        sid, address = created["session_id"], created["endpoints"]["8000"]
        host, port = address.rsplit(":", 1)

        def idle_secs() -> float:
            return float(http.get(f"/v1/sessions/{sid}").json()["idle_secs"])

        with socket.create_connection((host, int(port)), timeout=10):
            # the server inside waits for a request line: the connection stays open
            assert _wait_for(lambda: idle_secs() == 0.0, TTL_S * 0.8), "not counted"
            time.sleep(TTL_S * 2.5)  # well past the TTL, no exec meanwhile
            assert http.get(f"/v1/sessions/{sid}").status_code == 200
            assert idle_secs() == 0.0
        assert _wait_for(lambda: http.get(f"/v1/sessions/{sid}").status_code == 410, 30)
