"""``connect()`` / ``connect_async()``: the eight resolution cases of docs/wire.md §5,
keyword forwarding, named transports from plugins, and gateway key rules."""

from __future__ import annotations

import os
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import collimate_rl.client as client_module
from collimate_rl import (
    AsyncCollimateClient,
    AsyncGatewayClient,
    CollimateClient,
    CollimateError,
    GatewayClient,
    SessionClient,
    connect,
    connect_async,
)
from collimate_rl.plugins import get_plugin_manager, hookimpl
from collimate_rl.testing import BlockingBridge, FakeDaemon, serve_unix
from collimate_rl.transport import AsyncSessionClient

ENV_VARS = (
    "COLLIMATE_SERVE_SOCKET",
    "COLLIMATE_API_KEY",
    "COLLIMATE_BASE_URL",
    "COLLIMATE_SERVE_URL",
)
KEY = "col_demo_abc123"


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """A clean environment, and a SESSION socket path that does not exist."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(client_module, "SESSION_SOCKET", str(tmp_path / "no-session.sock"))
    return monkeypatch


def where(client: Any) -> tuple[str, str]:
    """(class name, endpoint) of a client."""
    return type(client).__name__, client.endpoint


# The eight cases, in priority order: each case sets everything below it too,
# so it proves it wins over all lower ones.
CASES = [
    (
        "1 explicit unix_socket",
        {"unix_socket": "/tmp/x.sock"},
        ("CollimateClient", "unix:/tmp/x.sock"),
    ),
    ("2 explicit api_key", {"api_key": KEY}, ("GatewayClient", "https://gw.env")),
    (
        "3 explicit base_url",
        {"base_url": "http://10.9.9.9:1"},
        ("CollimateClient", "http://10.9.9.9:1"),
    ),
    ("4 $COLLIMATE_SERVE_SOCKET", {}, ("CollimateClient", "unix:/env/serve.sock")),
    ("5 $COLLIMATE_API_KEY", {}, ("GatewayClient", "https://gw.env")),
    ("6 $COLLIMATE_SERVE_URL", {}, ("CollimateClient", "http://serve.env:9")),
    ("7 SESSION socket exists", {}, ("CollimateClient", "unix:SESSION")),
    ("8 default", {}, ("CollimateClient", "http://127.0.0.1:8080")),
]


def _set_env_from(case: int, env: pytest.MonkeyPatch, session_sock: str) -> None:
    """Everything of lower priority than ``case`` (and the case itself, for
    env cases) is present."""
    if case <= 4:
        env.setenv("COLLIMATE_SERVE_SOCKET", "/env/serve.sock")
    if case <= 5:
        env.setenv("COLLIMATE_API_KEY", "col_pro_fromenv")
    env.setenv("COLLIMATE_BASE_URL", "https://gw.env")
    if case <= 6:
        env.setenv("COLLIMATE_SERVE_URL", "http://serve.env:9")
    if case <= 7:
        Path(session_sock).touch()
        env.setattr(client_module, "SESSION_SOCKET", session_sock)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["connect", "connect_async"])
@pytest.mark.parametrize(("label", "kwargs", "expected"), CASES, ids=[c[0] for c in CASES])
def test_resolution_order(
    env: pytest.MonkeyPatch,
    tmp_path: Path,
    label: str,
    kwargs: dict[str, Any],
    expected: tuple[str, str],
    asynchronous: bool,
) -> None:
    case = int(label.split()[0])
    session_sock = str(tmp_path / "session.sock")
    _set_env_from(case, env, session_sock)
    made = (connect_async if asynchronous else connect)(**kwargs)
    name, endpoint = expected
    if asynchronous:
        name = "Async" + name
    assert where(made) == (name, endpoint.replace("SESSION", session_sock))
    anything: Any = made
    assert isinstance(anything, AsyncSessionClient) is asynchronous
    assert isinstance(anything, SessionClient) is not asynchronous


def test_api_key_makes_base_url_the_gateway_origin(env: pytest.MonkeyPatch) -> None:
    made = connect("https://gw.example.invalid/", api_key=KEY)
    assert isinstance(made, GatewayClient)
    assert made.base_url == "https://gw.example.invalid"
    assert made.tier == "demo"


def test_api_key_without_base_url_uses_the_public_gateway(env: pytest.MonkeyPatch) -> None:
    made = connect(api_key=KEY)
    assert isinstance(made, GatewayClient)
    assert made.base_url == "https://api.collimate.ai"


def test_keyword_arguments_are_forwarded(env: pytest.MonkeyPatch) -> None:
    made = connect("http://127.0.0.1:1", timeout=7.0, retries=5, backoff=0.5, retry_budget=2.0)
    assert isinstance(made, CollimateClient)
    assert (made.timeout, made.retries, made.backoff, made.retry_budget) == (7.0, 5, 0.5, 2.0)
    gw = connect_async(api_key=KEY, timeout=9.0, retries=0)
    assert isinstance(gw, AsyncGatewayClient)
    assert (gw.timeout, gw.retries) == (9.0, 0)


def test_unix_socket_with_base_url_keeps_the_socket(env: pytest.MonkeyPatch) -> None:
    made = connect("http://collimate", unix_socket="/run/x.sock")
    assert isinstance(made, CollimateClient)
    assert made.endpoint == "unix:/run/x.sock"
    assert made.base_url == "http://collimate"


def test_daemon_from_env_and_for_node_socket(env: pytest.MonkeyPatch) -> None:
    env.setenv("COLLIMATE_SERVE_URL", "http://serve.env:9")
    assert CollimateClient.from_env().endpoint == "http://serve.env:9"
    env.setenv("COLLIMATE_SERVE_SOCKET", "/env/serve.sock")
    assert CollimateClient.from_env().endpoint == "unix:/env/serve.sock"
    assert CollimateClient.from_env(base_url="http://x:1").endpoint == "http://x:1"
    assert CollimateClient.for_node_socket().endpoint == "unix:/run/collimate-session/serve.sock"
    assert AsyncCollimateClient.for_node_socket("/a.sock").endpoint == "unix:/a.sock"


def test_connect_reaches_a_real_server_on_the_session_socket(env: pytest.MonkeyPatch) -> None:
    with FakeDaemon() as daemon, serve_unix(daemon.handle) as path:
        env.setattr(client_module, "SESSION_SOCKET", path)
        with connect() as made:
            assert made.health()["status"] == "ok"
            assert made.exec_once("shell", command="echo via-session-socket")["stdout"] == (
                "via-session-socket\n"
            )


# -- named transports --------------------------------------------------------


class _Recorder:
    def __init__(self, asynchronous: bool) -> None:
        self.asynchronous = asynchronous
        self.calls: list[dict[str, Any]] = []

    def __call__(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        cls = AsyncCollimateClient if self.asynchronous else CollimateClient
        return cls(base_url=kwargs.get("base_url", "http://plugin.invalid"))


@pytest.fixture
def plugin_transports() -> Iterator[dict[str, _Recorder]]:
    factories = {"recorder": _Recorder(False), "recorder-async": _Recorder(True)}
    plugin = types.ModuleType("a_transport_plugin")
    plugin.collimate_rl_transports = hookimpl(lambda: factories)  # type: ignore[attr-defined]
    pm = get_plugin_manager()
    pm.register(plugin, name="test-transport-plugin")
    try:
        yield factories
    finally:
        pm.unregister(plugin)


def test_named_transport_from_a_plugin(
    env: pytest.MonkeyPatch, plugin_transports: dict[str, _Recorder]
) -> None:
    made = connect("http://given.invalid", transport="recorder", timeout=3.0)
    assert isinstance(made, CollimateClient)
    assert plugin_transports["recorder"].calls == [
        {"base_url": "http://given.invalid", "timeout": 3.0}
    ]
    made_async = connect_async(transport="recorder-async")
    assert isinstance(made_async, AsyncCollimateClient)
    with pytest.raises(TypeError, match="blocking client"):
        connect_async(transport="recorder")


def test_builtin_transport_names(env: pytest.MonkeyPatch) -> None:
    assert isinstance(connect(transport="daemon", base_url="http://x:1"), CollimateClient)
    assert isinstance(connect(transport="gateway", api_key=KEY), GatewayClient)
    assert isinstance(connect_async(transport="daemon"), AsyncCollimateClient)
    assert isinstance(connect_async(transport="gateway", api_key=KEY), AsyncGatewayClient)


def test_unknown_transport_names_the_known_ones(env: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match=r"unknown transport 'nope' \(known: .*daemon.*gateway"):
        connect(transport="nope")


# -- gateway keys and the daemon's catalog error ----------------------------------


@pytest.mark.parametrize(
    "key", ["col_free_abc", "sk-123", "col_pro_", "col_demo", "Bearer col_pro_x"]
)
def test_malformed_keys_are_refused_clearly(env: pytest.MonkeyPatch, key: str) -> None:
    with pytest.raises(ValueError, match=r"col_<tier>_<secret>"):
        GatewayClient(key)


def test_a_missing_key_names_the_variable(env: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="COLLIMATE_API_KEY"):
        GatewayClient()


@pytest.mark.parametrize("tier", ["demo", "pro", "ent"])
def test_tier_and_env_key(env: pytest.MonkeyPatch, tier: str) -> None:
    env.setenv("COLLIMATE_API_KEY", f"col_{tier}_s3cr3t_with_underscores")
    env.setenv("COLLIMATE_BASE_URL", "https://gw.example.invalid")
    gw = GatewayClient.from_env()
    assert gw.tier == tier
    assert gw.base_url == "https://gw.example.invalid"
    assert "s3cr3t" not in repr(gw)


def test_daemon_images_point_to_the_gateway(env: pytest.MonkeyPatch) -> None:
    daemon_client = CollimateClient("http://127.0.0.1:1")
    for call in (daemon_client.images, daemon_client.list_images):
        with pytest.raises(CollimateError, match=r"gateway feature.*api_key"):
            call()
    with (
        BlockingBridge(AsyncCollimateClient("http://127.0.0.1:1")) as bridge,
        pytest.raises(CollimateError, match="gateway feature"),
    ):
        bridge.images()


def test_environment_is_left_untouched() -> None:
    # connect() reads the environment; it must never write to it.
    before = dict(os.environ)
    connect("http://127.0.0.1:1")
    assert dict(os.environ) == before


# -- the cluster step (8): a plugin that finds a cluster's graders ----------


class _Cluster:
    """A plugin's ``collimate_rl_cluster_client``: records its calls and
    answers with a client of the graders (or None: not in a cluster)."""

    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.calls: list[tuple[bool, bool, dict[str, Any]]] = []

    def __call__(self, asynchronous: bool, required: bool, options: Any) -> Any:
        self.calls.append((asynchronous, required, dict(options)))
        if not self.answer:
            return None
        cls = AsyncCollimateClient if asynchronous else CollimateClient
        return cls("http://grader.cluster.invalid:1")


def _cluster_plugin(answer: bool) -> Iterator[_Cluster]:
    finder = _Cluster(answer)
    plugin = types.ModuleType("a_cluster_plugin")

    def collimate_rl_cluster_client(asynchronous: bool, required: bool, options: Any) -> Any:
        return finder(asynchronous, required, options)

    plugin.collimate_rl_cluster_client = hookimpl(tryfirst=True)(  # type: ignore[attr-defined]
        collimate_rl_cluster_client
    )
    pm = get_plugin_manager()
    pm.register(plugin, name="test-cluster-plugin")
    try:
        yield finder
    finally:
        pm.unregister(plugin)


@pytest.fixture
def cluster() -> Iterator[_Cluster]:
    yield from _cluster_plugin(True)


@pytest.fixture
def no_cluster() -> Iterator[_Cluster]:
    yield from _cluster_plugin(False)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["connect", "connect_async"])
def test_the_cluster_step_comes_before_the_default(
    env: pytest.MonkeyPatch, cluster: _Cluster, asynchronous: bool
) -> None:
    made = (connect_async if asynchronous else connect)(timeout=4.0)
    assert made.endpoint == "http://grader.cluster.invalid:1"
    assert isinstance(made, AsyncSessionClient) is asynchronous
    assert cluster.calls == [(asynchronous, False, {"timeout": 4.0})]


def test_the_cluster_step_comes_after_the_environment(
    env: pytest.MonkeyPatch, tmp_path: Path, cluster: _Cluster
) -> None:
    env.setenv("COLLIMATE_SERVE_URL", "http://serve.env:9")
    assert connect().endpoint == "http://serve.env:9"
    env.delenv("COLLIMATE_SERVE_URL")
    session_sock = tmp_path / "session.sock"
    session_sock.touch()
    env.setattr(client_module, "SESSION_SOCKET", str(session_sock))
    assert connect().endpoint == f"unix:{session_sock}"
    assert cluster.calls == []  # never asked while a step above it names a target


def test_outside_a_cluster_the_default_address_stays(
    env: pytest.MonkeyPatch, no_cluster: _Cluster
) -> None:
    assert connect().endpoint == "http://127.0.0.1:8080"
    assert no_cluster.calls == [(False, False, {})]


@pytest.mark.parametrize("named", ["env", "explicit"])
def test_ray_url_asks_for_the_cluster_step(
    env: pytest.MonkeyPatch, cluster: _Cluster, named: str
) -> None:
    if named == "env":
        env.setenv("COLLIMATE_SERVE_URL", "ray://")
        made = connect()
    else:
        made = connect("ray://")
    assert made.endpoint == "http://grader.cluster.invalid:1"
    assert cluster.calls == [(False, True, {})]


def test_ray_url_without_graders_is_an_error_never_the_default(
    env: pytest.MonkeyPatch, no_cluster: _Cluster
) -> None:
    env.setenv("COLLIMATE_SERVE_URL", "ray://")
    with pytest.raises(ValueError, match="ray://"):
        connect()
    with pytest.raises(ValueError, match="ray://"):
        connect_async()
