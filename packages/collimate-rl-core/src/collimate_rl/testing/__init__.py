"""Test kit for clients and backends of the Collimate wire.

* :class:`SessionSurfaceConformance` / :class:`AsyncSessionSurfaceConformance`:
  the conformance suite (pytest classes) every client + server pair
  subclasses (imported lazily: only they need pytest);
* :class:`~.fake_daemon.FakeDaemon`: an in-memory daemon wire for
  ``httpx.MockTransport`` or a real socket;
* :class:`~.fake_gateway.FakeGateway`: the gateway's sandbox routes over it;
* :func:`~.servers.serve_tcp` / :func:`~.servers.serve_unix`: serve a handler
  on a real loopback port or unix socket;
* :class:`~.bridge.BlockingBridge`: drive an async client from blocking code.

For the plugins' tests: :mod:`~.fixtures` (a real local backend, and
``target``: a test over TCP and a unix socket), :mod:`~.tool_sabotage`
(hostile cells for a framework's Python tool, and the capped backend they
run on); :mod:`~.sabotage` is core's catalogue of self-sabotaging judged
programs, and builds the tests that grade them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .bridge import BlockingBridge
from .fake_daemon import FakeDaemon
from .fake_gateway import FakeGateway
from .servers import serve_tcp, serve_unix

if TYPE_CHECKING:  # at run time they load lazily: only they need pytest
    from .conformance import AsyncSessionSurfaceConformance, SessionSurfaceConformance

__all__ = [
    "AsyncSessionSurfaceConformance",
    "BlockingBridge",
    "FakeDaemon",
    "FakeGateway",
    "SessionSurfaceConformance",
    "serve_tcp",
    "serve_unix",
]


def __getattr__(name: str) -> Any:
    if name in ("SessionSurfaceConformance", "AsyncSessionSurfaceConformance"):
        from . import conformance

        return getattr(conformance, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
