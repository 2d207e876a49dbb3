"""Hostile requests against a real local backend: each gets a clear 4xx or
is shed, and the server stays healthy and keeps serving others."""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from collimate_rl import CollimateClient, CollimateError
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.testing.hostile import (
    PROBES,
    Probe,
    closed_by_server,
    idle_flood,
    probe,
    request,
    slow_loris,
    status_of,
)


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    b = LocalCollimateBackend(run_slots=1)
    b.config.max_body_bytes = 1 << 20  # a limit a test can go over cheaply
    with b:
        yield b


def serves(backend: LocalCollimateBackend) -> bool:
    with CollimateClient(backend.base_url, timeout=30) as c:
        return c.exec_once("py", code="print(6 * 7)")["stdout"].strip() == "42"


@pytest.mark.parametrize("hostile", PROBES, ids=[p.name for p in PROBES])
def test_a_hostile_request_gets_a_clear_4xx(backend: LocalCollimateBackend, hostile: Probe) -> None:
    status = probe("127.0.0.1", backend.port or 0, hostile.raw)
    assert status in hostile.due, f"{hostile.name}: answered {status}"
    assert backend.health()["status"] == "ok"


def test_a_4xx_names_what_was_wrong(backend: LocalCollimateBackend) -> None:
    body = json.dumps({"template_id": "py", "code": "1", "timeout_second": 5}).encode()
    with socket.create_connection(("127.0.0.1", backend.port or 0)) as sock:
        sock.sendall(request("POST", "/v1/exec", body))
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert status_of(answer) == 400
    error = json.loads(answer.split(b"\r\n\r\n", 1)[1])
    assert error["error_code"] == "bad_request" and "timeout_second" in error["error"]


def test_a_body_over_the_limit_sent_in_full_is_413(backend: LocalCollimateBackend) -> None:
    big = json.dumps({"template_id": "py", "code": "#" * (2 << 20)}).encode()
    assert probe("127.0.0.1", backend.port or 0, request("POST", "/v1/exec", big)) == 413
    assert serves(backend)


def test_a_negative_timeout_from_the_client_is_a_typed_400(backend: LocalCollimateBackend) -> None:
    with CollimateClient(backend.base_url, retries=0) as c, pytest.raises(CollimateError) as err:
        c.exec_once("py", code="print(1)", timeout_seconds=-3)
    assert err.value.status == 400


def test_slow_loris_clients_are_cut_and_others_served(backend: LocalCollimateBackend) -> None:
    http = backend.server.http
    assert http is not None
    saved, http.idle_timeout_s = http.idle_timeout_s, 1.0
    try:
        # trickling headers, then a body, a byte every 50 ms, never ending
        assert slow_loris("127.0.0.1", backend.port or 0, seconds=20) < 20
        assert slow_loris("127.0.0.1", backend.port or 0, seconds=20, in_body=True) < 20
        assert serves(backend)
    finally:
        http.idle_timeout_s = saved


def test_thousands_of_idle_connections_are_shed_and_others_served(
    backend: LocalCollimateBackend,
) -> None:
    """1,500 idle connections (3,000 fds in this process, both ends: the
    machine's soft limit is ``ulimit -n``) against a cap of 200: the server
    sheds the longest-idle ones and still answers a real client."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    count = min(1500, (soft - 200) // 2)
    http = backend.server.http
    assert http is not None
    saved, http.max_connections = http.max_connections, 200
    shed_before = http.shed
    try:
        with idle_flood("127.0.0.1", backend.port or 0, count) as socks:
            assert len(socks) == count
            assert serves(backend)
            assert http.shed - shed_before >= count - 200
            assert closed_by_server(socks) >= 1
        assert backend.health()["status"] == "ok"
    finally:
        http.max_connections = saved


def test_host_paths_in_files_never_reach_the_host(backend: LocalCollimateBackend) -> None:
    """Absolute host paths and ``..`` traversal in ``files`` land in the
    sandbox (or are refused), never on the host."""
    if backend.health()["isolation"] != "namespaces":
        pytest.skip("process isolation writes absolute paths on the host by design")
    tag = uuid.uuid4().hex
    target = Path("/tmp") / f"collimate-reliab-{tag}"
    files = [
        {"path": str(target), "content": "x"},
        {"path": f"../../../../../../tmp/collimate-reliab-{tag}-up", "content": "x"},
    ]
    with CollimateClient(backend.base_url, retries=0) as c:
        try:
            c.exec_once("py", code="print(1)", files=files)
        except CollimateError as err:
            assert err.status is not None and 400 <= err.status < 500
    assert not target.exists()
    assert not Path(f"/tmp/collimate-reliab-{tag}-up").exists()
    assert not any(name.startswith(f"collimate-reliab-{tag}") for name in os.listdir("/tmp"))
