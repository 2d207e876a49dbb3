"""Drive an async client from blocking test code, on a real event loop.

One test body then checks both twins: the sync client directly, the async
one through :class:`BlockingBridge`, which runs every coroutine method to
completion on a private event loop owned by the bridge (the async client's
connection pool lives on that loop for the bridge's whole life).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["BlockingBridge"]


class BlockingBridge:
    """Blocking facade over an async client: ``bridge.health()`` runs
    ``await client.health()``; attributes that are not coroutine methods
    pass through. :meth:`close` awaits ``client.aclose()`` and closes the loop."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.loop = asyncio.new_event_loop()

    def run(self, awaitable: Any) -> Any:
        return self.loop.run_until_complete(awaitable)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.client, name)
        if not inspect.iscoroutinefunction(attr):
            return attr

        @functools.wraps(attr)
        def call(*args: Any, **kwargs: Any) -> Any:
            return self.run(attr(*args, **kwargs))

        return call

    def close(self) -> None:
        if self.loop.is_closed():
            return
        try:
            self.run(self.client.aclose())
            self.run(self.loop.shutdown_asyncgens())
        finally:
            self.loop.close()

    def __enter__(self) -> BlockingBridge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def blocking(client: Any) -> Any:
    """``client`` itself when it blocks, else a :class:`BlockingBridge`."""
    close: Callable[..., Any] | None = getattr(client, "aclose", None)
    return BlockingBridge(client) if close is not None else client
