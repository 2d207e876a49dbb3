"""Clients of the managed gateway wire (docs/wire.md §3): Bearer ``col_*`` keys.

:class:`GatewayClient` covers the whole gateway surface (catalog, templates,
sandboxes, forks, usage) and also implements the daemon client's session
surface 1:1 (``create_session`` / ``session_exec`` / ``exec_once`` /
``get_session`` / ``list_sessions`` / ``delete_session``), so everything built
on a client runs on either wire unchanged. :class:`AsyncGatewayClient` is its
coroutine twin.

The gateway has no one-shot exec: :meth:`GatewayClient.exec_once` composes
create -> exec -> delete, and the delete runs on every path (exec failure,
``KeyboardInterrupt``, task cancellation), because a leaked sandbox keeps
holding one of the tier's concurrency slots.
"""

from __future__ import annotations

from .._transport.gateway_base import DEFAULT_GATEWAY_URL
from .._transport.gateway_base import register_flows as register_flows
from .._transport.gateway_calls import CDP_PORT, CONNECT_URL_MAX_TTL
from ._async import AsyncGatewayClient
from ._sync import GatewayClient

__all__ = [
    "CDP_PORT",
    "CONNECT_URL_MAX_TTL",
    "DEFAULT_GATEWAY_URL",
    "AsyncGatewayClient",
    "GatewayClient",
]

# Their public home: reprs, docs and pickles name this module. (The async
# client is written in collimate_rl/gateway/_async.py; the blocking one is
# generated from it by tools/unasync.py.)
for _cls in (GatewayClient, AsyncGatewayClient):
    _cls.__module__ = __name__
del _cls
