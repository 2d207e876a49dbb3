"""The two wires core speaks, as named transports that ``connect()`` resolves.

A built-in plugin (listed in :data:`collimate_rl.plugins.builtin.BUILTIN_PLUGIN_MODULES`),
beside :mod:`.transport`, the module that resolves it. The client modules are
imported inside the factories, not here: building the plugin manager must
stay cheap.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .plugins.events import TransportFactory
from .plugins.markers import hookimpl


def daemon_client(*args: Any, **kwargs: Any) -> Any:
    """A :class:`collimate_rl.client.CollimateClient` (node-local daemon wire)."""
    from .client import CollimateClient

    return CollimateClient(*args, **kwargs)


def gateway_client(*args: Any, **kwargs: Any) -> Any:
    """A :class:`collimate_rl.gateway.GatewayClient` (managed gateway wire)."""
    from .gateway import GatewayClient

    return GatewayClient(*args, **kwargs)


@hookimpl
def collimate_rl_transports() -> Mapping[str, TransportFactory]:
    return {"daemon": daemon_client, "gateway": gateway_client}
