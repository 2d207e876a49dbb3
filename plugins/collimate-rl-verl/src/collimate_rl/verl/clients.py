"""One client per target, shared by every call of a process (blocking) or
of an event loop (async).

verl's reward workers call ``compute_score`` once per sample, from a thread
pool (sync) or as tasks of one loop (async). Sharing the client is what lets
core coalesce those single grades into packs; a client per call would send
each in an exec of its own. A blocking client is never reused across a
``fork`` (a ``ProcessPoolExecutor`` worker builds its own), and an async
client belongs to the loop that made it.
"""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from typing import Any

from collimate_rl import connect, connect_async

__all__ = ["async_client", "sync_client"]

Target = tuple[str | None, str | None, str | None]

_lock = threading.Lock()
_sync: dict[tuple[int, Target], Any] = {}
_async: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Target, Any]] = (
    weakref.WeakKeyDictionary()
)


def _kwargs(target: Target) -> dict[str, str]:
    base_url, unix_socket, api_key = target
    named = {"base_url": base_url, "unix_socket": unix_socket, "api_key": api_key}
    return {k: v for k, v in named.items() if v is not None}


def sync_client(target: Target) -> Any:
    """This process's blocking client of ``target`` (made on first use)."""
    key = (os.getpid(), target)
    with _lock:
        client = _sync.get(key)
        if client is None:
            client = _sync[key] = connect(**_kwargs(target))
        return client


def async_client(target: Target) -> Any:
    """The running loop's async client of ``target`` (made on first use)."""
    loop = asyncio.get_running_loop()
    with _lock:
        per_loop = _async.setdefault(loop, {})
        client = per_loop.get(target)
        if client is None:
            client = per_loop[target] = connect_async(**_kwargs(target))
        return client
