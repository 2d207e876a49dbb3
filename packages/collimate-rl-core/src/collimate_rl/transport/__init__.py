"""``connect()``: one entry point, either wire.

Everything above the transports (``grade``, ``Sandbox``, the framework
adapters) takes any object with the *session surface* (:class:`SessionClient`)
and never asks which wire is underneath. ``connect()`` picks the wire from
what the caller named, then from the environment (docs/wire.md §5):

1. explicit ``unix_socket``: the daemon over that socket;
2. explicit ``api_key``: the gateway (``base_url`` is then its origin);
3. explicit ``base_url``: a daemon at that URL;
4. ``$COLLIMATE_SERVE_SOCKET``: the daemon over that socket;
5. ``$COLLIMATE_API_KEY`` (with ``$COLLIMATE_BASE_URL``): the gateway;
6. ``$COLLIMATE_SERVE_URL``: a daemon at that URL;
7. the in-pod SESSION socket, when it exists;
8. the graders of the cluster this process runs in, when a plugin finds
   them (the ``collimate_rl_cluster_client`` hook: the Ray plugin's, inside
   a Ray job whose cluster runs graders); ``$COLLIMATE_SERVE_URL`` naming a
   cluster scheme (``ray://``) asks for this step explicitly;
9. ``http://127.0.0.1:8080``.

A daemon URL naming several nodes, comma-separated (explicit or in
``$COLLIMATE_SERVE_URL``), gives a :class:`~collimate_rl.nodes.MultiNodeClient`
over them: every adapter that calls ``connect()`` spreads over a fleet.

``transport="name"`` skips all of that and calls a client factory that a
plugin registered through the ``collimate_rl_transports`` hook.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .. import client as _client
from ..client import AsyncCollimateClient
from ..gateway import AsyncGatewayClient
from ..nodes import AsyncMultiNodeClient, MultiNodeClient
from ..plugins.manager import get_plugin_manager
from ..plugins.registry import transport_factories
from ._async import AsyncSessionClient
from ._sync import SessionClient

__all__ = [
    "AsyncSessionClient",
    "SessionClient",
    "connect",
    "connect_async",
]

# their public home (the API docs, isinstance checks' reprs), as before
for _protocol in (SessionClient, AsyncSessionClient):
    _protocol.__module__ = __name__


#: What ``connect_async(transport=...)`` builds for core's own wire names
#: (the plugin registry maps those names to the blocking clients).
_ASYNC_BUILTINS: Mapping[str, Any] = {
    "daemon": AsyncCollimateClient,
    "gateway": AsyncGatewayClient,
}


def _named(transport: str) -> Any:
    factories = transport_factories()  # core's built-ins and every plugin's
    try:
        return factories[transport]
    except KeyError:
        known = ", ".join(sorted(factories)) or "none"
        raise ValueError(f"unknown transport {transport!r} (known: {known})") from None


#: ``$COLLIMATE_SERVE_URL`` values that name a cluster's graders rather than a URL.
CLUSTER_SCHEMES = ("ray://",)


def _cluster_named(url: str | None) -> bool:
    return bool(url) and str(url).strip().lower() in CLUSTER_SCHEMES


def _cluster(asynchronous: bool, required: bool, options: Mapping[str, Any]) -> Any:
    """The cluster's graders as a client (step 8), or None when no plugin
    finds any; ``required`` (``ray://`` named): an error instead of None."""
    client = get_plugin_manager().hook.collimate_rl_cluster_client(
        asynchronous=asynchronous, required=required, options=dict(options)
    )
    if client is None and required:
        raise ValueError(
            "COLLIMATE_SERVE_URL names a cluster (ray://) but no plugin found its graders: "
            "install collimate-rl-ray and run `collimate ray up` on the cluster"
        )
    return client


def _resolve(
    base_url: str | None, api_key: str | None, unix_socket: str | None
) -> tuple[str, dict[str, Any]]:
    """``("daemon" | "gateway" | "cluster", constructor kwargs)`` by the
    docs/wire.md §5 order (``cluster``: ask the cluster step, then the
    default address; ``required`` says whether it was named)."""
    if unix_socket is not None:
        kw: dict[str, Any] = {"unix_socket": unix_socket}
        if base_url is not None:
            kw["base_url"] = base_url
        return "daemon", kw
    if api_key is not None:
        return "gateway", {"api_key": api_key, "base_url": base_url}
    if base_url is not None:
        if _cluster_named(base_url):
            return "cluster", {"required": True}
        return "daemon", {"base_url": base_url}
    env = os.environ
    if env.get("COLLIMATE_SERVE_SOCKET"):
        return "daemon", {"unix_socket": env["COLLIMATE_SERVE_SOCKET"]}
    if env.get("COLLIMATE_API_KEY"):
        return "gateway", {
            "api_key": env["COLLIMATE_API_KEY"],
            "base_url": env.get("COLLIMATE_BASE_URL") or None,
        }
    if env.get("COLLIMATE_SERVE_URL"):
        if _cluster_named(env["COLLIMATE_SERVE_URL"]):
            return "cluster", {"required": True}
        return "daemon", {"base_url": env["COLLIMATE_SERVE_URL"]}
    if os.path.exists(_client.SESSION_SOCKET):
        return "daemon", {"unix_socket": _client.SESSION_SOCKET}
    return "cluster", {"required": False}


def _default() -> dict[str, Any]:
    return {"base_url": _client.DEFAULT_BASE_URL}


def _several(kw: Mapping[str, Any]) -> bool:
    """A daemon ``base_url`` naming several nodes (comma-separated): a node pool."""
    url = kw.get("base_url")
    return isinstance(url, str) and "," in url and "unix_socket" not in kw


def _explicit(base_url: str | None, api_key: str | None, unix_socket: str | None) -> dict[str, Any]:
    return {
        k: v
        for k, v in (("base_url", base_url), ("api_key", api_key), ("unix_socket", unix_socket))
        if v is not None
    }


def connect(
    base_url: str | None = None,
    *,
    api_key: str | None = None,
    unix_socket: str | None = None,
    transport: str | None = None,
    **kwargs: Any,
) -> SessionClient:
    """A blocking client of whichever wire the arguments or the environment
    name (see the module docstring); ``kwargs`` go to the client
    (``timeout``, ``retries``, ``backoff``, ``retry_budget``, ...)."""
    if transport is not None:
        made: SessionClient = _named(transport)(
            **_explicit(base_url, api_key, unix_socket), **kwargs
        )
        return made
    wire, kw = _resolve(base_url, api_key, unix_socket)
    if wire == "cluster":
        found: SessionClient | None = _cluster(False, kw["required"], kwargs)
        if found is not None:
            return found
        wire, kw = "daemon", _default()
    if wire == "daemon" and _several(kw):
        return MultiNodeClient(kw["base_url"], **kwargs)
    # the built-in wires are transports like any plugin's: resolved through
    # the hook, so a plugin wrapping it sees (and may trace) them too
    client: SessionClient = _named(wire)(**kw, **kwargs)
    return client


def connect_async(
    base_url: str | None = None,
    *,
    api_key: str | None = None,
    unix_socket: str | None = None,
    transport: str | None = None,
    **kwargs: Any,
) -> AsyncSessionClient:
    """:func:`connect`, returning the coroutine twin of the chosen client
    (a plugin's named ``transport`` must produce an async client)."""
    if transport is not None:
        factory = _ASYNC_BUILTINS.get(transport) or _named(transport)
        made = factory(**_explicit(base_url, api_key, unix_socket), **kwargs)
        if not isinstance(made, AsyncSessionClient):
            raise TypeError(
                f"transport {transport!r} made a blocking client ({type(made).__name__}); "
                "connect_async needs one whose methods are coroutines"
            )
        return made
    wire, kw = _resolve(base_url, api_key, unix_socket)
    if wire == "cluster":
        found_async: AsyncSessionClient | None = _cluster(True, kw["required"], kwargs)
        if found_async is not None:
            return found_async
        kw = _default()
    if wire == "gateway":
        return AsyncGatewayClient(**kw, **kwargs)
    if _several(kw):
        return AsyncMultiNodeClient(kw["base_url"], **kwargs)
    return AsyncCollimateClient(**kw, **kwargs)
