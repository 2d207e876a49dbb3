"""One client per target per process, shared by every env of the process.

SkyRL makes a new env per rollout and steps them from a pool of up to 32
threads. Core coalesces concurrent ``grade`` calls into packs per target,
and a client keeps a pool of keep-alive connections: both work best when
the envs of one worker process share one client. So envs never own a
client; they ask :func:`shared_client` for the one of their target on every
step (a dict lookup).

Nothing here crosses a process boundary: an env pickled into a Ray worker
carries only its settings, and the first step in the new process builds
that process's client. After ``os.fork`` the child starts with an empty
table (and a fresh lock, in case the fork happened while it was held).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
from typing import Any

from collimate_rl import SessionClient, connect

from .settings import EnvSettings

__all__ = ["close_shared_clients", "shared_client", "target_key"]

#: The environment variables ``connect()`` reads to pick a target.
_TARGET_ENV = (
    "COLLIMATE_SERVE_SOCKET",
    "COLLIMATE_API_KEY",
    "COLLIMATE_BASE_URL",
    "COLLIMATE_SERVE_URL",
)

_lock = threading.Lock()
_clients: dict[tuple[Any, ...], SessionClient] = {}


def target_key(settings: EnvSettings) -> tuple[Any, ...]:
    """What tells two targets apart: the explicit ones, else the environment
    as it is now (a test or a launcher that changes it gets a new client)."""
    explicit = (settings.base_url, settings.socket, settings.api_key)
    if any(v is not None for v in explicit):
        return ("explicit", *explicit)
    return ("environment", *(os.environ.get(name) or None for name in _TARGET_ENV))


def shared_client(settings: EnvSettings) -> SessionClient:
    """The process's client of ``settings``' target (made on first use)."""
    key = target_key(settings)
    client = _clients.get(key)
    if client is not None:
        return client
    with _lock:
        client = _clients.get(key)
        if client is None:
            client = connect(
                settings.base_url, api_key=settings.api_key, unix_socket=settings.socket
            )
            _clients[key] = client
        return client


def close_shared_clients() -> None:
    """Close and forget every shared client (at exit; tests that switch backends)."""
    with _lock:
        clients = list(_clients.values())
        _clients.clear()
    for client in clients:
        with contextlib.suppress(Exception):  # closing at exit must not mask anything
            client.close()


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()
    _clients.clear()  # the parent's clients stay the parent's


os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(close_shared_clients)
