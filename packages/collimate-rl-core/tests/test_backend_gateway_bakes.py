"""Bakes on the gateway wire of the real local backend: the ready check
really runs, phases walk to Live or end Failed, pool telemetry is the
engine's real warm pool, expect / release move it, delete guards it."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from collimate_rl import GatewayClient
from collimate_rl.errors import GatewayError
from collimate_rl.local_backend import LocalCollimateBackend

KEY = "col_pro_bakes_tenant"
ORDER = ["Pending", "Converting", "Distributing", "Live"]


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with LocalCollimateBackend(api_keys=[KEY], gateway_max_warm=2) as b:
        yield b


@pytest.fixture
def client(backend: LocalCollimateBackend) -> Iterator[GatewayClient]:
    with GatewayClient(KEY, backend.base_url) as c:
        yield c
        for sb in c.list_sandboxes():
            c.delete_sandbox(sb["id"])
        for tpl in c.list_templates():
            c.delete_template(tpl["id"])


def _until(
    client: GatewayClient, tid: str, done: Any, limit_s: float = 120
) -> list[dict[str, Any]]:
    seen = []
    deadline = time.monotonic() + limit_s
    while True:
        status = client.get_template(tid)
        seen.append(status)
        if done(status):
            return seen
        assert time.monotonic() < deadline, f"bake {tid} stuck: {status}"
        time.sleep(0.05)


def _engine_warm(backend: LocalCollimateBackend, tid: str) -> int:
    gateway = backend.server.gateway
    assert gateway is not None
    bake = gateway.bakes._bakes[tid]
    assert bake.spec is not None
    return int(backend.server.service.engine.warm_count(bake.spec))  # type: ignore[attr-defined,union-attr]


def test_a_cmd_bake_walks_to_live_and_its_pool_is_the_real_pool(
    client: GatewayClient, backend: LocalCollimateBackend
) -> None:
    created = client.create_template(
        name="json-ready",
        image="python:3.11",
        ready={
            "cmd": "python3 -c 'import json' && test \"$GREETING\" = hi",
            "env": {"GREETING": "hi"},
        },
        width=2,
    )
    assert created["phase"] == "Pending" and created["bake_mode"] == "built"
    again = client.create_template(
        name="json-ready",
        image="python:3.11",
        ready={
            "cmd": "python3 -c 'import json' && test \"$GREETING\" = hi",
            "env": {"GREETING": "hi"},
        },
        width=2,
    )
    assert again["id"] == created["id"]  # idempotent: a deterministic id
    seen = _until(client, created["id"], lambda s: s["converge_state"] == "converged")
    phases = [s["phase"] for s in seen]
    assert phases[-1] == "Live"
    assert [ORDER.index(p) for p in phases] == sorted(ORDER.index(p) for p in phases)
    final = seen[-1]
    assert final["declared"] == 2 and final["warm"] >= 2 and final["frozen"] == 0
    assert final["per_node"] == [{"node": "local", "warm": final["warm"], "frozen": 0}]
    assert final["error"] == "" and final["build_fails"] == 0
    assert final["visibility"] == "private"  # a bake is its tenant's own
    assert final["warm"] <= _engine_warm(backend, created["id"]) + 1
    # it runs sandboxes
    sid = client.create_sandbox(created["id"])["id"]
    assert client.exec(sid, code="print(2 + 2)")["stdout"] == "4\n"
    assert client.exec(sid, command="echo $GREETING")["stdout"] == "hi\n"  # ready.env stays
    with pytest.raises(GatewayError) as got:
        client.delete_template(created["id"])
    assert (got.value.status, got.value.code) == (409, "template_in_use")
    client.delete_sandbox(sid)
    assert client.delete_template(created["id"]) == {"deleted": True, "id": created["id"]}
    with pytest.raises(GatewayError) as got:
        client.get_template(created["id"])
    assert got.value.code == "not_found"


def test_a_failing_ready_check_ends_failed_with_error_and_build_fails(
    client: GatewayClient,
) -> None:
    tid = client.create_template(
        name="broken", image="python:3.11", ready={"cmd": "echo missing-dep; exit 3"}, width=1
    )["id"]
    final = _until(client, tid, lambda s: s["phase"] == "Failed")[-1]
    assert final["build_fails"] == 2
    assert "exited 3" in final["error"] and "missing-dep" in final["error"]
    with pytest.raises(GatewayError) as got:
        client.create_sandbox(tid)
    assert (got.value.status, got.value.code) == (409, "template_not_ready")


def test_an_image_that_cannot_run_here_fails_the_bake(client: GatewayClient) -> None:
    tid = client.create_template(name="nope", image="registry.example/nope:1", width=1)["id"]
    final = _until(client, tid, lambda s: s["phase"] == "Failed")[-1]
    assert "not available on the local backend" in final["error"]


def test_an_http_ready_check_waits_for_the_server_cmd_starts(client: GatewayClient) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tid = client.create_template(
        name="web",
        image="python:3.11",
        ready={
            "cmd": f"sleep 0.3; python3 -m http.server {port} --bind 127.0.0.1",
            "http": f"http://127.0.0.1:{port}/",
            "http_timeout_s": 30,
        },
        width=1,
    )["id"]
    final = _until(client, tid, lambda s: s["phase"] in ("Live", "Failed"))[-1]
    assert final["phase"] == "Live", final
    bad = client.create_template(
        name="web-down",
        image="python:3.11",
        ready={"http": f"http://127.0.0.1:{port}/", "http_timeout_s": 1},
        width=1,
    )["id"]
    down = _until(client, bad, lambda s: s["phase"] == "Failed")[-1]
    assert "no 2xx" in down["error"]


def test_a_catalog_image_without_a_ready_check_is_inherited(client: GatewayClient) -> None:
    created = client.create_template(name="py-env", image="local/py", width=1, expected_width=2)
    assert created["bake_mode"] == "inherited_artifact"
    final = _until(client, created["id"], lambda s: s["converge_state"] == "converged")[-1]
    assert final["declared"] == 2  # the expected width, capped by the node (2)


def test_expect_and_release_move_the_declared_width(
    client: GatewayClient, backend: LocalCollimateBackend
) -> None:
    tid = client.create_template(name="sized", image="python:3.11", width=1)["id"]
    _until(client, tid, lambda s: s["converge_state"] == "converged")
    assert client.get_template(tid)["declared"] == 1
    answer = client.expect_width(tid, 100_000)
    assert answer == {"id": tid, "expected_width": 1024}  # clamped to the pro plan
    grown = _until(client, tid, lambda s: s["converge_state"] == "converged")[-1]
    assert grown["declared"] == 2 and _engine_warm(backend, tid) >= 2
    released = client.release_template(tid)
    assert released["id"] == tid and released["released"] is True
    assert released["released_at"].endswith("Z")
    assert client.release_template(tid)["released_at"] == released["released_at"]
    assert client.get_template(tid)["declared"] == 1
    assert _engine_warm(backend, tid) == 1  # the extra warm clone was closed
    # baking the same name again declares its widths anew
    again = client.create_template(name="sized", image="python:3.11", width=2)
    assert again["id"] == tid
    assert client.get_template(tid)["declared"] == 2


def test_catalog_rows_are_not_the_tenants_to_delete_or_size(client: GatewayClient) -> None:
    for call in (
        lambda: client.delete_template("py"),
        lambda: client.expect_width("py", 4),
        lambda: client.release_template("py"),
    ):
        with pytest.raises(GatewayError) as got:
            call()
        assert (got.value.status, got.value.code) == (403, "forbidden")
        assert "catalog" in got.value.message


def test_bad_bake_bodies_say_which_field(client: GatewayClient) -> None:
    cases = [
        ({"name": "x", "image": "python:3", "width": -1}, "pool.width"),
        ({"name": "bad name!", "image": "python:3", "width": 1}, "name"),
        ({"name": "x", "image": "python:3", "width": 1, "ready": {"ports": [0]}}, "ready.ports"),
        (
            {"name": "x", "image": "python:3", "width": 1, "ready": {"env": {"1x": "y"}}},
            "ready.env",
        ),
    ]
    for kwargs, field in cases:
        with pytest.raises(GatewayError) as got:
            client.create_template(**kwargs)  # type: ignore[arg-type]
        assert got.value.code == "bad_request" and field in got.value.message
