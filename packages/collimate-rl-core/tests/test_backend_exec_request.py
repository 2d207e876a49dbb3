"""ExecRequest validation, as pure functions (the server tests cover the wire)."""

from __future__ import annotations

import pytest

from collimate_rl.local_backend.egress import decide_egress
from collimate_rl.local_backend.engine.api import TemplateSpec
from collimate_rl.local_backend.exec_request import format_timeout, join_commands, parse_exec_body
from collimate_rl.local_backend.routing import Request
from collimate_rl.local_backend.wire_errors import WireError


def test_defaults_and_fresh_seed() -> None:
    a = parse_exec_body({"code": "1"})
    b = parse_exec_body({"code": "1"})
    assert a.timeout_s == 30.0 and a.kind == "code" and a.files == ()
    assert len(a.seed) == 64 and a.seed != b.seed


def test_join_commands_quotes() -> None:
    assert join_commands([["echo", "a b"], ["ls", "-l"]]) == "echo 'a b'\nls -l"
    assert join_commands([["echo", "it's; rm -rf /"]]) == "echo 'it'\"'\"'s; rm -rf /'"


def test_files_newline_rule() -> None:
    job = parse_exec_body(
        {
            "command": "true",
            "files": [{"path": "a", "content": ""}, {"path": "b", "content": "x\n"}],
        }
    )
    assert job.files == (("a", "\n"), ("b", "x\n"))


@pytest.mark.parametrize("bad", [True, "10", -1, 3600.5, None])
def test_timeouts(bad: object) -> None:
    if bad is None:
        assert parse_exec_body({"code": "1", "timeout_seconds": None}).timeout_s == 30.0
        return
    with pytest.raises(WireError) as info:
        parse_exec_body({"code": "1", "timeout_seconds": bad})
    assert info.value.error_code == "bad_request"


def test_format_timeout() -> None:
    assert format_timeout(5.0) == "timeout after 5s"
    assert format_timeout(0.5) == "timeout after 0.5s"


def test_egress_decisions() -> None:
    vsock = TemplateSpec(id="v", kind="shell")
    net = TemplateSpec(id="n", kind="shell", networked=True)
    assert decide_egress(None, vsock) is None
    with pytest.raises(WireError, match="template is vsock-only"):
        decide_egress({"mode": "none"}, vsock)
    open_ = decide_egress({}, net)
    assert open_ is not None and open_.enforced == "open"
    none = decide_egress({"mode": "none"}, net)
    assert none is not None and none.enforced == "none"
    allow = decide_egress({"allow": ["pypi.org"]}, net)
    assert (
        allow is not None and allow.enforced == "none" and "fail-closed" in allow.describe()["note"]
    )
    for policy in ({"preset": "rl-leakage"}, {"deny": ["x"]}, {"mode": "denylist"}):
        with pytest.raises(WireError, match="cannot be enforced"):
            decide_egress(policy, net)
    with pytest.raises(WireError):
        decide_egress({"mode": "sometimes"}, net)


def test_admin_locality() -> None:
    def req(peer: str) -> Request:
        return Request("POST", "/", "", {}, b"", peer)

    assert req("unix").is_local and req("127.0.0.1").is_local and req("::1").is_local
    assert not req("10.0.0.2").is_local


def test_dispatcher_routes_by_claim_then_path() -> None:
    import asyncio

    from collimate_rl.local_backend.routing import Dispatcher, Response, Router

    def envelope(tag: str):  # type: ignore[no-untyped-def]
        return lambda err: {"wire": tag, "code": err.error_code}

    daemon = Router("daemon", envelope("daemon"))
    gateway = Router(
        "gateway",
        envelope("gateway"),
        claims=lambda r: r.headers.get("authorization", "").startswith("Bearer "),
    )

    async def ok(_r: Request, p: dict[str, str]) -> Response:
        return Response(200, {"id": p.get("id")})

    daemon.add("GET", "/v1/sessions/{id}", ok)
    gateway.add("GET", "/v1/sandboxes/{id}", ok)
    dispatch = Dispatcher([daemon, gateway])

    def call(path: str, auth: str = "") -> Response:
        headers = {"authorization": auth} if auth else {}
        return asyncio.run(dispatch(Request("GET", path, "", headers, b"", "unix")))

    assert call("/v1/sessions/s1").body == {"id": "s1"}
    assert call("/v1/sandboxes/x").body == {"wire": "daemon", "code": "not_found"}
    assert call("/v1/sandboxes/x", "Bearer col_pro_1").body == {"id": "x"}
    assert call("/v1/sessions/s1", "Bearer col_pro_1").body == {
        "wire": "gateway",
        "code": "not_found",
    }
