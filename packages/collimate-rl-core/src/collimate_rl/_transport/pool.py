"""The pooled httpx client behind one SDK client, and its lifecycle.

One SDK client owns one httpx client (keep-alive connections reused across
calls). That pool is *process-local state*: sockets inherited through
``os.fork`` are shared with the parent (two processes reading one socket
interleave answers), a pickled client lands in another process entirely
(Ray, multiprocessing), and an ``httpx.AsyncClient`` is bound to the event
loop that opened its connections. So the pool is never pickled, and it is
re-created lazily whenever the process (or, for async, the running loop) is
not the one that created it. The inherited pool is dropped, not closed:
closing it in a child could shut down the parent's connections.
"""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

__all__ = ["AsyncPool", "HttpSettings", "SyncPool"]

#: Generous on purpose: bounding concurrency is the caller's job (a grader's
#: ``concurrency=``); the pool only avoids reconnecting.
_LIMITS = httpx.Limits(max_connections=1024, max_keepalive_connections=128)


@dataclass(frozen=True)
class HttpSettings:
    """Everything needed to (re-)create the pool, and nothing that is
    process-bound, so it pickles.

    ``unix_socket`` routes every request through that socket (``base_url``
    then only fills the Host header). ``httpx_transport`` replaces the
    network entirely (tests inject ``httpx.MockTransport`` here).
    ``trust_env`` lets the gateway honour ``HTTPS_PROXY``; the node-local
    daemon never goes through a proxy.
    """

    base_url: str
    timeout: float
    unix_socket: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    auth_headers: Mapping[str, str] = field(default_factory=dict)
    httpx_transport: Any = None
    trust_env: bool = False

    @property
    def endpoint(self) -> str:
        """Where the server is, for messages and observer events."""
        return f"unix:{self.unix_socket}" if self.unix_socket else self.base_url

    def timeout_for(self, read_timeout: float | None) -> httpx.Timeout:
        if read_timeout is None:
            return httpx.Timeout(self.timeout)
        return httpx.Timeout(self.timeout, read=read_timeout)

    def _client_kwargs(self) -> dict[str, Any]:
        return {
            "base_url": self.base_url,
            "timeout": httpx.Timeout(self.timeout),
            "headers": dict(self.headers),
            "follow_redirects": False,
        }


class SyncPool:
    """The ``httpx.Client`` of one SDK client, per process."""

    def __init__(self, settings: HttpSettings) -> None:
        self.settings = settings
        self._client: httpx.Client | None = None
        self._pid = os.getpid()
        self._lock = threading.Lock()

    def client(self) -> httpx.Client:
        client = self._client
        if client is not None and self._pid == os.getpid():
            return client
        return self._create()

    def _create(self) -> httpx.Client:
        if self._pid != os.getpid():
            # Forked: the pool and its lock belong to the parent; forget both.
            self._client = None
            self._lock = threading.Lock()
            self._pid = os.getpid()
        with self._lock:
            if self._client is None:
                self._client = self._build()
            return self._client

    def _build(self) -> httpx.Client:
        s = self.settings
        kwargs = s._client_kwargs()
        if s.httpx_transport is not None:
            kwargs["transport"] = s.httpx_transport
        elif s.unix_socket is not None or not s.trust_env:
            kwargs["transport"] = httpx.HTTPTransport(uds=s.unix_socket, limits=_LIMITS)
        else:
            kwargs["limits"] = _LIMITS
        return httpx.Client(trust_env=s.trust_env, **kwargs)

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None and self._pid == os.getpid():
            client.close()

    def __getstate__(self) -> dict[str, Any]:
        return {"settings": self.settings}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["settings"])  # type: ignore[misc]


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:  # not under asyncio (trio): loops cannot be compared
        return None


class AsyncPool:
    """The ``httpx.AsyncClient`` of one SDK client, per process and per
    event loop (``asyncio.run`` twice in a worker must not reuse sockets
    of a closed loop)."""

    def __init__(self, settings: HttpSettings) -> None:
        self.settings = settings
        self._client: httpx.AsyncClient | None = None
        self._pid = os.getpid()
        self._loop: weakref.ReferenceType[asyncio.AbstractEventLoop] | None = None

    def client(self) -> httpx.AsyncClient:
        # No lock: the event loop runs this without interleaving.
        loop = _running_loop()
        client = self._client
        if client is not None and self._pid == os.getpid() and self._same_loop(loop):
            return client
        self._pid = os.getpid()
        self._loop = weakref.ref(loop) if loop is not None else None
        self._client = self._build()
        return self._client

    def _same_loop(self, loop: asyncio.AbstractEventLoop | None) -> bool:
        if loop is None or self._loop is None:
            return loop is None and self._loop is None
        return self._loop() is loop

    def _build(self) -> httpx.AsyncClient:
        s = self.settings
        kwargs = s._client_kwargs()
        if s.httpx_transport is not None:
            kwargs["transport"] = s.httpx_transport
        elif s.unix_socket is not None or not s.trust_env:
            kwargs["transport"] = httpx.AsyncHTTPTransport(uds=s.unix_socket, limits=_LIMITS)
        else:
            kwargs["limits"] = _LIMITS
        return httpx.AsyncClient(trust_env=s.trust_env, **kwargs)

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None and self._pid == os.getpid() and self._same_loop(_running_loop()):
            await client.aclose()

    def __getstate__(self) -> dict[str, Any]:
        return {"settings": self.settings}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["settings"])  # type: ignore[misc]
