"""The two wires core speaks, as named transports that ``connect()`` resolves.

The client modules are imported inside the factories, not here: building the
plugin manager must stay cheap and must not import httpx, and the transport
layer must be free to import the plugin layer without a cycle.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from ..events import TransportFactory
from ..markers import hookimpl


def daemon_client(*args: Any, **kwargs: Any) -> Any:
    """A :class:`collimate_rl.client.CollimateClient` (node-local daemon wire)."""
    client_cls = importlib.import_module("collimate_rl.client").CollimateClient
    return client_cls(*args, **kwargs)


def gateway_client(*args: Any, **kwargs: Any) -> Any:
    """A :class:`collimate_rl.gateway.GatewayClient` (managed gateway wire)."""
    client_cls = importlib.import_module("collimate_rl.gateway").GatewayClient
    return client_cls(*args, **kwargs)


@hookimpl
def collimate_rl_transports() -> Mapping[str, TransportFactory]:
    return {"daemon": daemon_client, "gateway": gateway_client}
