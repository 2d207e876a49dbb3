"""One async client per target and event loop; one blocking client per
target and process.

TRL runs every async reward function on one event loop of its own (a daemon
thread), for the whole run. The client made there on the first call serves
every later call, so its connections stay warm and core's coalescing and
backpressure see every grade. An async client belongs to the loop that made
it: another loop (a test's, an evaluation's) gets its own.

TRL calls the tools of an environment (and the plain ``tools=`` callables)
from the trainer's thread, or from a thread pool in its experimental async
trainer: those use a blocking client, one per target for the whole process,
shared by every environment instance (one pool of connections).
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from typing import Any

from collimate_rl import connect, connect_async

__all__ = ["Target", "loop_client", "process_client"]

Target = tuple[str | None, str | None, str | None]

_lock = threading.Lock()
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Target, Any]] = (
    weakref.WeakKeyDictionary()
)
_blocking: dict[Target, Any] = {}


def loop_client(target: Target) -> Any:
    """The running loop's client of ``(base_url, unix_socket, api_key)``;
    all ``None``: the target :func:`collimate_rl.connect_async` finds in the
    environment."""
    loop = asyncio.get_running_loop()
    base_url, unix_socket, api_key = target
    named = {"base_url": base_url, "unix_socket": unix_socket, "api_key": api_key}
    with _lock:
        per_loop = _clients.setdefault(loop, {})
        client = per_loop.get(target)
        if client is None:
            kwargs = {k: v for k, v in named.items() if v is not None}
            client = per_loop[target] = connect_async(**kwargs)
        return client


def process_client(target: Target) -> Any:
    """The process's blocking client of ``(base_url, unix_socket, api_key)``
    (all ``None``: the target :func:`collimate_rl.connect` finds in the
    environment), made on first use."""
    base_url, unix_socket, api_key = target
    named = {"base_url": base_url, "unix_socket": unix_socket, "api_key": api_key}
    with _lock:
        client = _blocking.get(target)
        if client is None:
            client = _blocking[target] = connect(
                **{k: v for k, v in named.items() if v is not None}
            )
        return client
