"""CollimateProvider as OpenEnv drives it: start_container -> wait_for_ready ->
stop_container / close, against a real local backend over TCP and a unix
socket; env_vars reach the server or the start is refused, never dropped."""

from __future__ import annotations

import json
import socket
import urllib.request
from typing import Any

import pytest

from collimate_rl import CollimateClient, CollimateError, GatewayClient, connect
from collimate_rl.local_backend import LocalCollimateBackend

pytestmark = pytest.mark.usefixtures("openenv_line")


def _get(base_url: str, path: str = "/") -> dict[str, Any]:
    with urllib.request.urlopen(base_url + path, timeout=10) as resp:  # loopback
        return dict(json.loads(resp.read()))


def _refused(base_url: str) -> bool:
    host, port = base_url.removeprefix("http://").rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
    except OSError:
        return True
    return False


def _sessions(backend: LocalCollimateBackend) -> list[dict[str, Any]]:
    return connect(backend.base_url).list_sessions()


def test_is_a_real_openenv_container_provider() -> None:
    from openenv.core.containers.runtime import ContainerProvider

    from collimate_rl.openenv import CollimateProvider

    assert issubclass(CollimateProvider, ContainerProvider)


def test_start_wait_stop_over_each_transport(backend: LocalCollimateBackend, target: str) -> None:
    from collimate_rl.openenv import CollimateProvider

    provider = CollimateProvider(target)
    # OpenEnv passes Docker-minded options through: accepted
    base_url = provider.start_container("oe-echo:latest", wait_timeout=45.0, detach=True)
    try:
        assert base_url.startswith("http://127.0.0.1:")
        provider.wait_for_ready(base_url)
        assert _get(base_url, "/health") == {}
        (listed,) = _sessions(backend)
        assert listed["session_id"] == provider.session_id
        assert listed["template_id"] == "oe-echo"
    finally:
        provider.stop_container()
    assert provider.session_id is None and _sessions(backend) == []
    assert _refused(base_url)
    provider.stop_container()  # twice: nothing to do
    provider.close()


def test_env_vars_reach_the_server(backend: LocalCollimateBackend) -> None:
    from collimate_rl.openenv import CollimateProvider

    with CollimateProvider(backend.base_url, env_vars={"OE_T_A": "provider", "OE_T_B": "b"}) as p:
        base_url = p.start_container("oe-echo", env_vars={"OE_T_A": "start"})
        p.wait_for_ready(base_url)
        assert _get(base_url) == {"OE_T_A": "start", "OE_T_B": "b"}  # the start's win
    assert _sessions(backend) == []  # close() reaped it


def test_env_vars_a_warm_server_cannot_take_are_refused(backend: LocalCollimateBackend) -> None:
    from collimate_rl.openenv import CollimateProvider

    provider = CollimateProvider(backend.base_url)
    with pytest.raises(CollimateError, match="keeps warm servers") as info:
        provider.start_container("oe-echo-warm", env_vars={"OE_T_A": "x"})
    assert info.value.status == 400
    assert provider.session_id is None and _sessions(backend) == []
    # without env_vars the warm template serves
    base_url = provider.start_container("oe-echo-warm", env_vars={})
    provider.wait_for_ready(base_url)
    provider.close()
    assert _sessions(backend) == []


def _gateway_front(backend: LocalCollimateBackend) -> Any:
    """The gateway's sandbox routes (docs/wire.md §3) in front of the real backend's
    sessions: the local backend does not speak the gateway wire yet, the
    sandboxes and their servers are real."""
    import httpx

    daemon = connect(backend.base_url)

    def handle(request: httpx.Request) -> httpx.Response:
        assert request.headers["authorization"].startswith("Bearer col_pro_")
        path = request.url.path
        if request.method == "POST" and path == "/v1/sandboxes":
            body = json.loads(request.content)
            assert set(body) <= {"template", "label", "labels", "egress"}  # no env on this wire
            s = daemon.create_session(body["template"])
            sandbox = {"id": s["session_id"], "template": body["template"]}
            return httpx.Response(200, json={**sandbox, "endpoints": s["endpoints"]})
        if request.method == "DELETE" and path.startswith("/v1/sandboxes/"):
            sid = path.rsplit("/", 1)[1]
            return httpx.Response(
                200, json={"deleted": daemon.delete_session(sid)["deleted"], "id": sid}
            )
        return httpx.Response(404, json={"code": "not_found", "message": path})

    return httpx.MockTransport(handle)


def test_over_the_gateway_wire(backend: LocalCollimateBackend) -> None:
    from collimate_rl.openenv import CollimateProvider

    gateway = GatewayClient(
        api_key="col_pro_test",
        base_url="http://127.0.0.1:9",
        httpx_transport=_gateway_front(backend),
    )
    with CollimateProvider(client=gateway) as provider:
        base_url = provider.start_container("oe-echo:latest")
        provider.wait_for_ready(base_url)
        assert _get(base_url, "/health") == {}
        assert [s["session_id"] for s in _sessions(backend)] == [provider.session_id]
    assert _sessions(backend) == [] and _refused(base_url)
    gateway.close()  # a client passed in is the caller's to close


def test_env_vars_over_the_gateway_are_refused_before_any_call() -> None:
    from collimate_rl.openenv import CollimateProvider

    gateway = GatewayClient(api_key="col_demo_test", base_url="http://127.0.0.1:9")
    provider = CollimateProvider(client=gateway)
    with pytest.raises(ValueError, match="bake them into the template"):
        provider.start_container("oe-echo", env_vars={"OE_T_A": "x"})
    assert provider.session_id is None


class _EnvDroppingClient(CollimateClient):
    """A daemon that takes ``env`` but does not confirm it (an older server
    ignoring the key): the real local backend cannot be made to do this."""

    def create_session(self, template_id: str, **kwargs: Any) -> dict[str, Any]:
        created = super().create_session(template_id, **kwargs)
        created.pop("env", None)
        return created


def test_env_vars_the_server_does_not_confirm_fail_the_start(
    backend: LocalCollimateBackend,
) -> None:
    from collimate_rl.openenv import CollimateProvider

    with _EnvDroppingClient(backend.base_url) as client:
        provider = CollimateProvider(client=client)
        with pytest.raises(RuntimeError, match="did not confirm env_vars"):
            provider.start_container("oe-echo", env_vars={"OE_T_A": "x"})
        assert provider.session_id is None
        assert _sessions(backend) == []  # the unconfirmed session was deleted


def test_one_server_per_provider(backend: LocalCollimateBackend) -> None:
    from collimate_rl.openenv import CollimateProvider

    with CollimateProvider(backend.base_url) as provider:
        provider.start_container("oe-echo")
        with pytest.raises(RuntimeError, match="one provider per environment client"):
            provider.start_container("oe-echo")
        assert len(_sessions(backend)) == 1
    assert _sessions(backend) == []


def test_port_picks_the_exposed_guest_port(backend: LocalCollimateBackend) -> None:
    from collimate_rl.openenv import CollimateProvider

    with CollimateProvider(backend.base_url) as provider:
        base_url = provider.start_container("oe-echo", port=8000)
        provider.wait_for_ready(base_url)
        provider.stop_container()
        with pytest.raises(ValueError, match=r"port 1234 is not exposed .* \['8000'\]"):
            provider.start_container("oe-echo", port=1234)
        assert provider.session_id is None
    assert _sessions(backend) == []


def test_a_template_without_a_server_is_refused_and_reaped(backend: LocalCollimateBackend) -> None:
    from collimate_rl.openenv import CollimateProvider

    with CollimateProvider(backend.base_url) as provider:
        with pytest.raises(RuntimeError, match="exposes no port"):
            provider.start_container("py")
        assert provider.session_id is None
    assert _sessions(backend) == []


def test_unknown_template_is_the_backends_error(backend: LocalCollimateBackend) -> None:
    from collimate_rl.openenv import CollimateProvider

    with CollimateProvider(backend.base_url) as provider:
        with pytest.raises(CollimateError, match="no template: nope") as info:
            provider.start_container("registry.example/team/nope:v1")
        assert info.value.status == 404


def test_wait_for_ready_times_out_on_a_server_without_health(
    backend: LocalCollimateBackend,
) -> None:
    from collimate_rl.openenv import CollimateProvider

    with CollimateProvider(backend.base_url) as provider:
        base_url = provider.start_container("oe-no-health")
        with pytest.raises(TimeoutError, match=r"/health not ready within 0.5s \(last: HTTP 404\)"):
            provider.wait_for_ready(base_url, timeout_s=0.5)
    assert _sessions(backend) == []


def test_custom_template_for_image(backend: LocalCollimateBackend) -> None:
    from collimate_rl.openenv import CollimateProvider

    seen: list[str] = []

    def resolve(image: str) -> str:
        seen.append(image)
        return "oe-echo"

    with CollimateProvider(backend.base_url, template_for_image=resolve) as provider:
        provider.start_container("whatever/else:1")
        assert connect(backend.base_url).list_sessions()[0]["template_id"] == "oe-echo"
    assert seen == ["whatever/else:1"]


def test_bad_arguments_are_named() -> None:
    from collimate_rl.openenv import CollimateProvider

    with pytest.raises(TypeError, match="env_vars: 'A' -> 1"):
        CollimateProvider("http://127.0.0.1:9", env_vars={"A": 1})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="either client= or target"):
        CollimateProvider("http://127.0.0.1:9", client=connect("http://127.0.0.1:9"))
