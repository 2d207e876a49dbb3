"""The gateway surface (docs/wire.md §3): routes, auth, shapes, and the one-shot
composition whose delete must happen on every path."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from collimate_rl import AsyncGatewayClient, CollimateError, DemoTierLimit, GatewayClient
from collimate_rl.testing import BlockingBridge, FakeGateway
from collimate_rl.testing.faults import Harness, Script, envelope, make_client

KEY = "col_ent_secret0000"
EXEC_OK = {"stdout": "ok\n", "stderr": "", "exit_code": 0, "seed": "ab" * 32, "seed_ack": "off"}


@pytest.fixture(params=["gateway-sync", "gateway-async"])
def make(request: pytest.FixtureRequest) -> Iterator[Callable[..., Harness]]:
    made: list[Harness] = []

    def factory(script: Script, **kwargs: Any) -> Harness:
        harness = make_client(request.param, script, **kwargs)
        made.append(harness)
        return harness

    yield factory
    for harness in made:
        harness.close()


def _echo(request: httpx.Request) -> httpx.Response:
    """Answers every route with what it received (for shape checks)."""
    body = json.loads(request.content) if request.content else None
    if request.method == "DELETE":
        return httpx.Response(200, json={"deleted": True, "id": request.url.path.rsplit("/", 1)[1]})
    return httpx.Response(200, json={"echo": body, "id": "sb1", "template": "t"})


# (method name, args, kwargs, expected method, path, body)
SURFACE: list[tuple[str, tuple[Any, ...], dict[str, Any], str, str, Any]] = [
    ("health", (), {}, "GET", "/v1/health", None),
    ("images", (), {}, "GET", "/v1/images", None),
    (
        "create_template",
        (),
        {"name": "n", "image": "img:1", "ready": {"cmd": "true"}, "width": 4, "expected_width": 8},
        "POST",
        "/v1/templates",
        {
            "name": "n",
            "image": "img:1",
            "ready": {"cmd": "true"},
            "pool": {"width": 4, "cold_fraction": 0},
            "expected_width": 8,
        },
    ),
    ("get_template", ("tp/1",), {}, "GET", "/v1/templates/tp%2F1", None),
    ("list_templates", (), {}, "GET", "/v1/templates", None),
    ("delete_template", ("tp1",), {}, "DELETE", "/v1/templates/tp1", None),
    ("expect_width", ("tp1", 64), {}, "POST", "/v1/templates/tp1/expect", {"width": 64}),
    ("release_template", ("tp1",), {}, "POST", "/v1/templates/tp1/release", {}),
    (
        "create_sandbox",
        ("python",),
        {"label": "l", "labels": {"k": "v"}, "egress": {"mode": "none"}},
        "POST",
        "/v1/sandboxes",
        {"template": "python", "label": "l", "labels": {"k": "v"}, "egress": {"mode": "none"}},
    ),
    ("list_sandboxes", (), {}, "GET", "/v1/sandboxes", None),
    ("get_sandbox", ("sb1",), {}, "GET", "/v1/sandboxes/sb1", None),
    ("delete_sandbox", ("sb1",), {}, "DELETE", "/v1/sandboxes/sb1", None),
    (
        "exec",
        ("sb1",),
        {"code": "print(1)", "seed": "cd" * 32, "timeout_seconds": 5},
        "POST",
        "/v1/sandboxes/sb1/exec",
        {"code": "print(1)", "seed": "cd" * 32, "timeout_seconds": 5},
    ),
    ("fork", ("sb1",), {"count": 3}, "POST", "/v1/sandboxes/sb1/fork", {"count": 3}),
    (
        "fork",
        ("sb1",),
        {"count": 2, "labels": ["a", "b"]},
        "POST",
        "/v1/sandboxes/sb1/fork",
        {"count": 2, "labels": ["a", "b"]},
    ),
    ("suspend", ("sb1",), {}, "POST", "/v1/sandboxes/sb1/suspend", {}),
    ("resume", ("sb1",), {}, "POST", "/v1/sandboxes/sb1/resume", {}),
    ("usage", (), {}, "GET", "/v1/usage", None),
]


@pytest.mark.parametrize(
    ("name", "args", "kwargs", "method", "path", "body"),
    SURFACE,
    ids=[f"{row[0]}-{i}" for i, row in enumerate(SURFACE)],
)
def test_each_route_is_sent_as_the_wire_says_with_auth_but_on_health(
    make: Callable[..., Harness],
    name: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    method: str,
    path: str,
    body: Any,
) -> None:
    script = Script(default=_echo)
    h = make(script)
    getattr(h.client, name)(*args, **kwargs)
    (request,) = script.requests
    assert (request.method, request.url.raw_path.decode().split("?")[0]) == (method, path)
    assert (json.loads(request.content) if request.content else None) == body
    auth = request.headers.get("authorization")
    assert auth == (None if name == "health" else "Bearer col_pro_test0000")


def test_usage_bounds_are_query_parameters(make: Callable[..., Harness]) -> None:
    script = Script(default=_echo)
    h = make(script)
    h.client.usage(from_ts="2026-11-01T00:00:00Z", to_ts="2026-11-29T00:00:00Z")
    params = dict(script.requests[0].url.params)
    assert params == {"from": "2026-11-01T00:00:00Z", "to": "2026-11-29T00:00:00Z"}


@pytest.mark.parametrize("key", ["images", "templates"])
def test_images_accepts_the_legacy_key(make: Callable[..., Harness], key: str) -> None:
    catalog = [{"id": "python", "name": "Python", "tier": "demo"}]
    h = make(Script(default=httpx.Response(200, json={key: catalog})))
    assert h.client.images() == catalog
    assert h.client.list_images() == catalog


def test_lists_unwrap_their_envelopes(make: Callable[..., Harness]) -> None:
    script = Script(
        [
            httpx.Response(200, json={"templates": [{"id": "t1"}]}),
            httpx.Response(200, json={"sandboxes": [{"id": "s1", "template": "py"}]}),
            httpx.Response(200, json={"sandboxes": [{"id": "s1", "template": "py"}]}),
        ]
    )
    h = make(script)
    assert h.client.list_templates() == [{"id": "t1"}]
    assert h.client.list_sandboxes() == [{"id": "s1", "template": "py"}]
    assert h.client.list_sessions() == [
        {"id": "s1", "template": "py", "session_id": "s1", "template_id": "py"}
    ]


def test_session_surface_adds_the_daemon_keys(make: Callable[..., Harness]) -> None:
    script = Script(
        [
            httpx.Response(200, json={"id": "s9", "template": "py", "fork_time_ms": 0.4}),
            httpx.Response(200, json={"deleted": True, "id": "s9"}),
        ]
    )
    h = make(script)
    created = h.client.create_session("py", egress={"mode": "none"})
    assert created["session_id"] == "s9" and created["template_id"] == "py"
    assert created["fork_time_ms"] == 0.4
    assert json.loads(script.requests[0].content) == {"template": "py", "egress": {"mode": "none"}}
    assert h.client.delete_session("s9") == {"deleted": True, "id": "s9", "session_id": "s9"}


def test_template_deletes_and_conflicts(make: Callable[..., Harness]) -> None:
    script = Script(
        [
            envelope("gateway", 404, "not_found"),
            envelope("gateway", 409, "template_in_use", "3 sandboxes still run it"),
        ]
    )
    h = make(script)
    assert h.client.delete_template("gone") == {"deleted": False, "id": "gone"}
    with pytest.raises(CollimateError) as got:
        h.client.delete_template("busy")
    assert got.value.error_code == "template_in_use"
    assert len(script.requests) == 2


def test_create_template_is_idempotent_so_it_retries(make: Callable[..., Harness]) -> None:
    script = Script([envelope("gateway", 503, None)], default=_echo)
    h = make(script)
    h.client.create_template(name="n", image="i", width=1)
    assert len(script.requests) == 2


def test_ready_objects_serialize_themselves(make: Callable[..., Harness]) -> None:
    class Ready:
        def to_dict(self) -> dict[str, Any]:
            return {"http": "/health", "ports": [8000]}

    script = Script(default=_echo)
    h = make(script)
    h.client.create_template(name="n", image="i", width=2, ready=Ready())
    assert json.loads(script.requests[0].content)["ready"] == {"http": "/health", "ports": [8000]}


# -- exec_once: create -> exec -> delete, the delete on every path -----------------


def _one_shot_server(exec_step: Any) -> Script:
    """create answers sb1; the exec does ``exec_step``; deletes succeed."""

    def answer(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if request.method == "POST" and path == "/v1/sandboxes":
            return httpx.Response(200, json={"id": "sb1", "template": "py"})
        if path.endswith("/exec"):
            if isinstance(exec_step, BaseException):
                raise exec_step
            return exec_step  # type: ignore[no-any-return]
        if request.method == "DELETE":
            return httpx.Response(200, json={"deleted": True, "id": "sb1"})
        return httpx.Response(404, json={"code": "not_found", "message": "?"})

    return Script(default=answer)


def _calls(script: Script) -> list[tuple[str, str]]:
    return [(r.method, r.url.path) for r in script.requests]


ONE_SHOT = [
    ("POST", "/v1/sandboxes"),
    ("POST", "/v1/sandboxes/sb1/exec"),
    ("DELETE", "/v1/sandboxes/sb1"),
]


def test_exec_once_composes_create_exec_delete(make: Callable[..., Harness]) -> None:
    script = _one_shot_server(httpx.Response(200, json=EXEC_OK))
    h = make(script)
    res = h.client.exec_once("py", code="print(1)", egress={"mode": "none"})
    assert res == EXEC_OK
    assert _calls(script) == ONE_SHOT
    assert json.loads(script.requests[0].content) == {"template": "py", "egress": {"mode": "none"}}
    assert "template_id" not in json.loads(script.requests[1].content)


@pytest.mark.parametrize(
    "failure",
    [
        lambda: httpx.Response(500, json={"code": "internal", "message": "exec crashed"}),
        lambda: httpx.Response(429, json={"code": "demo_tier_limit", "message": "upgrade"}),
        lambda: httpx.ReadTimeout("read timed out"),
    ],
    ids=["server-error", "tier-limit", "read-timeout"],
)
def test_exec_once_deletes_when_the_exec_fails(
    make: Callable[..., Harness], failure: Callable[[], Any]
) -> None:
    script = _one_shot_server(failure())
    h = make(script)
    with pytest.raises(CollimateError):
        h.client.exec_once("py", command="true")
    assert _calls(script) == ONE_SHOT


def test_exec_once_deletes_on_keyboard_interrupt() -> None:
    script = _one_shot_server(KeyboardInterrupt())
    with (
        GatewayClient(KEY, "https://gw.invalid", httpx_transport=httpx.MockTransport(script)) as gw,
        pytest.raises(KeyboardInterrupt),
    ):
        gw.exec_once("py", command="true")
    assert _calls(script) == ONE_SHOT


def test_exec_once_deletes_when_its_task_is_cancelled() -> None:
    entered = asyncio.Event()
    never = asyncio.Event()
    calls: list[tuple[str, str]] = []

    async def answer(request: httpx.Request) -> httpx.Response:
        calls.append((request.method, request.url.path))
        if request.method == "POST" and request.url.path == "/v1/sandboxes":
            return httpx.Response(200, json={"id": "sb1", "template": "py"})
        if request.url.path.endswith("/exec"):
            entered.set()
            await never.wait()  # the exec hangs until the task is cancelled
        await asyncio.sleep(0)  # the delete itself yields to the loop
        return httpx.Response(200, json={"deleted": True, "id": "sb1"})

    async def scenario() -> None:
        gw = AsyncGatewayClient(
            KEY, "https://gw.invalid", httpx_transport=httpx.MockTransport(answer)
        )
        task = asyncio.ensure_future(gw.exec_once("py", command="sleep 100"))
        await entered.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await gw.aclose()

    asyncio.run(scenario())
    assert calls == ONE_SHOT


def test_exec_once_survives_a_second_cancellation_during_the_delete() -> None:
    delete_started = asyncio.Event()
    release_delete = asyncio.Event()
    calls: list[tuple[str, str]] = []

    async def answer(request: httpx.Request) -> httpx.Response:
        calls.append((request.method, request.url.path))
        if request.method == "POST" and request.url.path == "/v1/sandboxes":
            return httpx.Response(200, json={"id": "sb1", "template": "py"})
        if request.url.path.endswith("/exec"):
            await asyncio.Event().wait()
        delete_started.set()
        await release_delete.wait()
        calls.append(("DELETED", "sb1"))
        return httpx.Response(200, json={"deleted": True, "id": "sb1"})

    async def scenario() -> None:
        gw = AsyncGatewayClient(
            KEY, "https://gw.invalid", httpx_transport=httpx.MockTransport(answer)
        )
        task = asyncio.ensure_future(gw.exec_once("py", command="true"))
        while len(calls) < 2:
            await asyncio.sleep(0)
        task.cancel()
        await delete_started.wait()
        task.cancel()  # cancelled again while the delete is in flight
        with pytest.raises(asyncio.CancelledError):
            await task
        release_delete.set()
        for _ in range(1000):  # the shielded delete still completes (no I/O: a few steps)
            if calls[-1] == ("DELETED", "sb1"):
                break
            await asyncio.sleep(0)
        await gw.aclose()

    asyncio.run(scenario())
    assert calls[-1] == ("DELETED", "sb1")


def test_exec_once_does_not_delete_what_was_never_created(make: Callable[..., Harness]) -> None:
    script = Script(
        default=httpx.Response(404, json={"code": "not_found", "message": "no template"})
    )
    h = make(script)
    with pytest.raises(CollimateError):
        h.client.exec_once("nope", command="true")
    assert _calls(script) == [("POST", "/v1/sandboxes")]


def test_a_failed_delete_never_masks_the_exec_outcome(
    make: Callable[..., Harness], caplog: pytest.LogCaptureFixture
) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and request.url.path == "/v1/sandboxes":
            return httpx.Response(200, json={"id": "sb1", "template": "py"})
        if request.url.path.endswith("/exec"):
            return httpx.Response(200, json=EXEC_OK)
        return httpx.Response(403, json={"code": "forbidden", "message": "nope"})

    h = make(Script(default=answer))
    assert h.client.exec_once("py", command="true") == EXEC_OK
    assert "could not delete one-shot sandbox sb1" in caplog.text


def test_exec_once_validates_before_creating(make: Callable[..., Harness]) -> None:
    script = Script(default=_echo)
    h = make(script)
    with pytest.raises(ValueError, match="command="):
        h.client.exec_once("py")
    assert script.requests == []


# -- tiers through the fake gateway -------------------------------------------


def test_demo_tier_cap_surfaces_as_demo_tier_limit() -> None:
    with FakeGateway(demo_limit=2) as fake:
        gw = GatewayClient(
            "col_demo_x1", "https://gw.invalid", httpx_transport=fake.mock_transport()
        )
        first, second = gw.create_session("shell"), gw.create_session("shell")
        with pytest.raises(DemoTierLimit) as got:
            gw.create_session("shell")
        assert "Upgrade to pro" in got.value.message
        assert got.value.status == 429
        for created in (first, second):
            gw.delete_session(created["session_id"])
        assert gw.exec_once("shell", command="echo ok")["stdout"] == "ok\n"
        assert gw.list_sessions() == []


def test_a_bad_key_is_unauthorized_but_health_is_open() -> None:
    with FakeGateway() as fake:
        transport = fake.mock_transport()
        with BlockingBridge(
            AsyncGatewayClient("col_pro_x", "https://gw.invalid", httpx_transport=transport)
        ) as gw:
            assert gw.health()["status"] == "ok"
            assert [r[2] for r in fake.requests] == [None]
            assert {i["id"] for i in gw.images()} == {"python", "shell"}
        rogue = httpx.Client(transport=transport, base_url="https://gw.invalid")
        assert rogue.get("/v1/sandboxes").status_code == 401


def test_a_create_answer_without_an_id_is_a_clear_error(make: Callable[..., Harness]) -> None:
    script = Script(default=httpx.Response(200, json={"template": "py"}))
    h = make(script)
    with pytest.raises(CollimateError, match="sent no id"):
        h.client.exec_once("py", command="true")
    assert len(script.requests) == 1
