"""Every rule of docs/wire.md §5, for all four clients (daemon/gateway x sync/async).

Faults come from ``httpx.MockTransport`` scripts: a real server cannot time
out a read after the request left, or answer ``at_capacity`` exactly once,
on demand. Sleeps are recorded, never slept.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from collimate_rl import CollimateDrainingError, CollimateError, DemoTierLimit, GatewayError
from collimate_rl.retry import RetryPolicy, exec_read_timeout
from collimate_rl.testing.faults import FLAVOURS, Harness, Script, envelope, make_client

SESSION = {"session_id": "s1", "template_id": "t", "id": "s1", "template": "t"}
EXEC_OK = {"stdout": "ok\n", "stderr": "", "exit_code": 0, "seed": "ab" * 32, "seed_ack": "off"}

Make = Callable[..., Harness]


@pytest.fixture(params=FLAVOURS)
def make(request: pytest.FixtureRequest) -> Iterator[Make]:
    made: list[Harness] = []

    def factory(script: Script, **kwargs: Any) -> Harness:
        harness = make_client(request.param, script, **kwargs)
        made.append(harness)
        return harness

    yield factory
    for harness in made:
        harness.close()


def ok(payload: Any) -> httpx.Response:
    return httpx.Response(200, json=payload)


# What each kind of call is, on the session surface both wires share.
IDEMPOTENT: dict[str, Callable[[Any], Any]] = {
    "get_session": lambda c: c.get_session("s1"),
    "list_sessions": lambda c: c.list_sessions(),
    "delete_session": lambda c: c.delete_session("s1"),
}
NON_IDEMPOTENT: dict[str, Callable[[Any], Any]] = {
    "create_session": lambda c: c.create_session("t"),
    "session_exec": lambda c: c.session_exec("s1", command="true"),
}


def _ok_for(name: str, wire: str) -> httpx.Response:
    """A successful answer to ``name`` in the shape of ``wire``."""
    if name == "session_exec":
        return ok(EXEC_OK)
    if name == "list_sessions":
        return ok({"sandboxes": [SESSION]} if wire == "gateway" else [SESSION])
    if name == "delete_session":
        return ok({"deleted": True, "session_id": "s1", "id": "s1"})
    return ok(SESSION)


# -- idempotent requests ---------------------------------------------------


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
@pytest.mark.parametrize("name", sorted(IDEMPOTENT))
def test_idempotent_requests_retry_on_transient_statuses(
    make: Make, status: int, name: str
) -> None:
    script = Script()
    h = make(script)
    script.steps = [envelope(h.wire, status, None), _ok_for(name, h.wire)]
    IDEMPOTENT[name](h.client)
    assert len(script.requests) == 2
    assert len(h.sleeps) == 1


@pytest.mark.parametrize(
    "exc",
    [
        httpx.ReadTimeout("read timed out"),
        httpx.RemoteProtocolError("server disconnected"),
        httpx.ReadError("connection reset"),
        httpx.ConnectError("connection refused"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_idempotent_requests_retry_on_transport_errors(make: Make, exc: Exception) -> None:
    script = Script()
    h = make(script)
    script.steps = [exc, _ok_for("get_session", h.wire)]
    assert h.client.get_session("s1")["id"] == "s1"
    assert len(script.requests) == 2


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (400, "bad_request"),
        (401, "unauthorized"),
        (403, "forbidden"),
        (404, "not_found"),
        (404, "no_such_session"),
        (429, "quota_exceeded"),
        (429, "demo_tier_limit"),
        (409, None),
    ],
)
def test_never_retry_codes_are_never_retried(make: Make, status: int, code: str | None) -> None:
    script = Script()
    h = make(script)
    script.default = envelope(h.wire, status, code)
    with pytest.raises(CollimateError) as got:
        h.client.get_session("s1")
    assert len(script.requests) == 1
    assert h.sleeps == []
    assert got.value.status == status
    assert got.value.error_code == code


@pytest.mark.parametrize("code", ["session_gone", None])
@pytest.mark.parametrize("name", ["get_session", "session_exec"])
def test_410_is_never_retried(make: Make, code: str | None, name: str) -> None:
    script = Script()
    h = make(script)
    script.default = envelope(h.wire, 410, code)
    call = IDEMPOTENT.get(name) or NON_IDEMPOTENT[name]
    with pytest.raises(CollimateError) as got:
        call(h.client)
    assert got.value.status == 410
    assert len(script.requests) == 1


# -- non-idempotent POSTs -----------------------------------------------------


@pytest.mark.parametrize("code", ["at_capacity", "session_bringup_failed", "draining"])
@pytest.mark.parametrize("name", sorted(NON_IDEMPOTENT))
def test_posts_retry_when_the_server_proved_nothing_happened(
    make: Make, code: str, name: str
) -> None:
    script = Script()
    h = make(script)
    status = 500 if code == "session_bringup_failed" else 503
    script.steps = [envelope(h.wire, status, code), _ok_for(name, h.wire)]
    NON_IDEMPOTENT[name](h.client)
    assert len(script.sent("POST")) == 2


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
@pytest.mark.parametrize("name", sorted(NON_IDEMPOTENT))
def test_posts_are_not_retried_on_ambiguous_errors(make: Make, status: int, name: str) -> None:
    script = Script()
    h = make(script)
    script.default = envelope(h.wire, status, "internal" if status == 500 else None)
    with pytest.raises(CollimateError) as got:
        NON_IDEMPOTENT[name](h.client)
    assert got.value.status == status
    assert len(script.sent("POST")) == 1
    assert h.sleeps == []


@pytest.mark.parametrize(
    "exc",
    [
        httpx.ReadTimeout("read timed out"),
        httpx.WriteTimeout("write timed out"),
        httpx.ReadError("connection reset by peer"),
        httpx.WriteError("broken pipe"),
        httpx.RemoteProtocolError("server disconnected without sending a response"),
    ],
    ids=lambda e: type(e).__name__,
)
@pytest.mark.parametrize("name", sorted(NON_IDEMPOTENT))
def test_no_second_post_after_the_request_may_have_left(
    make: Make, exc: Exception, name: str
) -> None:
    script = Script([exc], default=_ok_for(name, "daemon"))
    h = make(script)
    with pytest.raises(CollimateError) as got:
        NON_IDEMPOTENT[name](h.client)
    assert len(script.sent("POST")) == 1
    assert h.sleeps == []
    assert "may already have acted" in str(got.value)
    assert got.value.status is None
    assert isinstance(got.value.__cause__, type(exc))


@pytest.mark.parametrize(
    "exc",
    [httpx.ConnectError("[Errno 111] Connection refused"), httpx.ConnectTimeout("connect")],
    ids=lambda e: type(e).__name__,
)
@pytest.mark.parametrize("name", sorted(NON_IDEMPOTENT))
def test_a_post_refused_before_connecting_is_retried(make: Make, exc: Exception, name: str) -> None:
    script = Script()
    h = make(script)
    script.steps = [exc, exc, _ok_for(name, h.wire)]
    NON_IDEMPOTENT[name](h.client)
    assert len(script.sent("POST")) == 3
    assert len(h.sleeps) == 2


def test_a_refused_connection_ends_in_a_clear_error(make: Make) -> None:
    script = Script(default=httpx.ConnectError("[Errno 111] Connection refused"))
    h = make(script, retries=2)
    with pytest.raises(CollimateError) as got:
        h.client.create_session("t")
    assert "could not connect" in str(got.value)
    assert len(script.requests) == 3


# -- draining, budget, backoff ------------------------------------------------


@pytest.mark.parametrize("name", [*sorted(NON_IDEMPOTENT), "get_session"])
def test_draining_after_retries_raises_the_draining_error(make: Make, name: str) -> None:
    script = Script()
    h = make(script, retries=3)
    script.default = envelope(h.wire, 503, "draining", "node draining")
    call = NON_IDEMPOTENT.get(name) or IDEMPOTENT[name]
    with pytest.raises(CollimateDrainingError) as got:
        call(h.client)
    assert len(script.requests) == 4  # the first try and three retries
    assert len(h.sleeps) == 3
    assert got.value.error_code == "draining"
    assert got.value.status == 503


def test_backoff_is_full_jitter_from_the_injected_rng(make: Make) -> None:
    script = Script()
    h = make(script, retries=3, backoff=0.5, seed=11)
    script.default = envelope(h.wire, 503, "at_capacity")
    with pytest.raises(CollimateError):
        h.client.create_session("t")
    rng = random.Random(11)
    assert h.sleeps == [rng.uniform(0, 0.5 * 2**i) for i in range(3)]


def test_sleeps_of_one_request_are_bounded_by_the_retry_budget(make: Make) -> None:
    script = Script()
    h = make(script, retries=50, backoff=10.0, retry_budget=2.5)
    script.default = envelope(h.wire, 503, "at_capacity")
    with pytest.raises(CollimateError):
        h.client.create_session("t")
    assert sum(h.sleeps) == pytest.approx(2.5)
    assert len(script.requests) == len(h.sleeps) + 1
    assert len(script.requests) < 51  # the budget, not the retry count, stopped it


def test_each_request_gets_its_own_budget(make: Make) -> None:
    script = Script()
    h = make(script, retries=1, backoff=1.0, retry_budget=5.0)
    busy = envelope(h.wire, 503, "at_capacity")
    script.steps = [
        busy,
        _ok_for("create_session", h.wire),
        busy,
        _ok_for("create_session", h.wire),
    ]
    h.client.create_session("t")
    h.client.create_session("t")
    assert len(script.requests) == 4
    assert len(h.sleeps) == 2


def test_retries_zero_means_one_attempt(make: Make) -> None:
    script = Script()
    h = make(script, retries=0)
    script.default = envelope(h.wire, 503, None)
    with pytest.raises(CollimateError):
        h.client.get_session("s1")
    assert len(script.requests) == 1


def test_retry_policy_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(retries=-1)
    with pytest.raises(ValueError):
        RetryPolicy(backoff=-0.1)


# -- exec timeout sizing ------------------------------------------------------


def test_exec_read_timeout_rule() -> None:
    assert exec_read_timeout(120.0, 30) == 120.0
    assert exec_read_timeout(120.0, 1800) == 1830.0
    assert exec_read_timeout(10.0, None) == 10.0


@pytest.mark.parametrize(("timeout_seconds", "read"), [(30, 120.0), (1800, 1830.0), (90, 120.0)])
@pytest.mark.parametrize("one_shot", [False, True])
def test_exec_read_timeout_is_sized_from_the_exec(
    make: Make, timeout_seconds: int, read: float, one_shot: bool
) -> None:
    seen: dict[str, dict[str, float]] = {}

    def answer(request: httpx.Request) -> httpx.Response:
        seen[request.url.path] = request.extensions["timeout"]
        if request.method == "DELETE":
            return ok({"deleted": True, "id": "s1"})
        return ok(SESSION if request.url.path.endswith("sandboxes") else EXEC_OK)

    h = make(Script(default=answer), timeout=120.0)
    if one_shot:
        h.client.exec_once("t", command="true", timeout_seconds=timeout_seconds)
    else:
        h.client.session_exec("s1", command="true", timeout_seconds=timeout_seconds)
    exec_paths = [p for p in seen if p.endswith("exec")]
    assert len(exec_paths) == 1
    assert seen[exec_paths[0]]["read"] == read
    for path, timeouts in seen.items():
        if path not in exec_paths:
            assert timeouts["read"] == 120.0  # everything else keeps the client timeout


# -- error envelopes ---------------------------------------------------------


@pytest.mark.parametrize("sent_as", ["daemon", "gateway"])
def test_both_envelopes_are_understood_on_both_wires(make: Make, sent_as: str) -> None:
    script = Script(default=envelope(sent_as, 404, "no_such_session", "no such session: s1"))  # type: ignore[arg-type]
    h = make(script)
    with pytest.raises(CollimateError) as got:
        h.client.get_session("s1")
    assert got.value.error_code == "no_such_session"
    assert got.value.message == "no such session: s1"
    assert got.value.status == 404
    assert isinstance(got.value, GatewayError) == (h.wire == "gateway")


@pytest.mark.parametrize("status", [403, 429])
def test_demo_tier_limit_keeps_the_message_verbatim(make: Make, status: int) -> None:
    notice = "Demo keys run 8 sandboxes at once.\nUpgrade: https://collimate.ai/pricing  "
    script = Script(
        default=httpx.Response(status, json={"code": "demo_tier_limit", "message": notice})
    )
    h = make(script)
    with pytest.raises(DemoTierLimit) as got:
        h.client.create_session("t")
    assert got.value.message == notice
    assert got.value.error_code == "demo_tier_limit"
    assert len(script.requests) == 1


def test_an_error_without_envelope_uses_the_body_text(make: Make) -> None:
    script = Script(default=httpx.Response(502, text="<html>Bad Gateway</html>"))
    h = make(script, retries=1)
    with pytest.raises(CollimateError) as got:
        h.client.get_session("s1")
    assert got.value.status == 502
    assert "Bad Gateway" in got.value.message
    assert len(script.requests) == 2  # a 502 on a GET is transient


def test_a_2xx_that_is_not_json_is_an_error(make: Make) -> None:
    script = Script(default=httpx.Response(200, text="hello, I am not the daemon"))
    h = make(script)
    with pytest.raises(CollimateError, match="not JSON"):
        h.client.get_session("s1")


def test_delete_of_a_missing_object_never_raises(make: Make) -> None:
    script = Script()
    h = make(script)
    script.steps = [envelope(h.wire, 404, "not_found"), envelope(h.wire, 410, "session_gone")]
    for _ in range(2):
        answer = h.client.delete_session("s1")
        assert answer["deleted"] is False
        assert answer["session_id"] == "s1"
    assert len(script.requests) == 2


def test_each_retry_is_logged_at_debug(make: Make, caplog: pytest.LogCaptureFixture) -> None:
    script = Script()
    h = make(script)
    script.steps = [envelope(h.wire, 503, "at_capacity", "full"), _ok_for("create_session", h.wire)]
    with caplog.at_level("DEBUG", logger="collimate_rl.transport"):
        h.client.create_session("t")
    (record,) = caplog.records
    assert "retrying POST /v1/" in record.getMessage()
    assert "(retry 1/3)" in record.getMessage()
    assert "at_capacity" in record.getMessage()
