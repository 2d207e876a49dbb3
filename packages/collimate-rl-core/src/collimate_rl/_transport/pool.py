"""The pooled connections behind one SDK client, and their lifecycle.

One SDK client owns one httpx connection pool (keep-alive connections reused
across calls). That pool is *process-local state*: sockets inherited through
``os.fork`` are shared with the parent (two processes reading one socket
interleave answers), a pickled client lands in another process entirely
(Ray, multiprocessing), and an async pool is bound to the event loop that
opened its connections. So the pool is never pickled, and it is re-created
lazily whenever the process (or, for async, the running loop) is not the one
that created it. The inherited pool is dropped, not closed: closing it in a
child could shut down the parent's connections.

Everything the pool holds is an httpx *transport*, and requests go straight
to it (``handle_request`` / ``handle_async_request``): the SDK builds
complete requests itself and needs none of ``httpx.Client``'s layers (URL
merging, cookies, redirects, auth flows), whose cost per request
``benchmarks/bench_http_parse.py`` measures. Which transport:

* an injected one (tests pass ``httpx.MockTransport``);
* the gateway honouring ``HTTPS_PROXY`` / ``NO_PROXY``: an ``httpx.Client``
  that resolves the proxies, behind a transport that hands it the request;
* plain HTTP (the daemon, TCP or a unix socket): the lean HTTP/1.1
  transports of ``h1`` / ``h1_sync``;
* anything else (TLS): httpx's own transports.
"""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from .h1 import AsyncH1Transport
from .h1_sync import H1Transport

__all__ = ["AsyncPool", "HttpSettings", "SyncPool"]

#: Small requests must not wait for a delayed ACK (httpcore writes headers
#: and body separately); what urllib3 does by default. TCP only.
_TCP_NODELAY = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]

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

    def timeout_for(self, read_timeout: float | None) -> dict[str, float]:
        """The per-request timeout extension: ``read`` may exceed the rest."""
        return {
            "connect": self.timeout,
            "read": self.timeout if read_timeout is None else read_timeout,
            "write": self.timeout,
            "pool": self.timeout,
        }

    @property
    def via_client(self) -> bool:
        """Whether requests need an ``httpx.Client`` (environment proxies)."""
        return self.httpx_transport is None and self.trust_env and self.unix_socket is None

    def _socket_options(self) -> list[tuple[int, int, int]] | None:
        return None if self.unix_socket else _TCP_NODELAY


class _ViaClient(httpx.BaseTransport):
    """An ``httpx.Client`` as a transport: what resolves environment proxies."""

    def __init__(self) -> None:
        self.client = httpx.Client(trust_env=True, limits=_LIMITS, follow_redirects=False)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self.client.send(request)

    def close(self) -> None:
        self.client.close()


class _AsyncViaClient(httpx.AsyncBaseTransport):
    """An ``httpx.AsyncClient`` as a transport (environment proxies)."""

    def __init__(self) -> None:
        self.client = httpx.AsyncClient(trust_env=True, limits=_LIMITS, follow_redirects=False)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self.client.send(request)

    async def aclose(self) -> None:
        await self.client.aclose()


def _chosen(
    settings: HttpSettings,
    via_client: Callable[[], Any],
    lean: Callable[[str, str | None], Any],
    general: Callable[[HttpSettings], Any],
) -> Any:
    """The transport a pool of either flavour builds, by one rule: the
    caller's own httpx transport; else an httpx client (environment proxies,
    ``trust_env``); else, for plain HTTP, the lean HTTP/1.1 transport;
    else httpx's (TLS)."""
    if settings.httpx_transport is not None:
        return settings.httpx_transport
    if settings.via_client:
        return via_client()
    if settings.base_url.startswith("http://"):
        return lean(settings.base_url, settings.unix_socket)
    return general(settings)


class SyncPool:
    """The connection pool of one blocking SDK client, per process."""

    def __init__(self, settings: HttpSettings) -> None:
        self.settings = settings
        self._pool: httpx.BaseTransport | None = None
        self._pid = os.getpid()
        self._lock = threading.Lock()

    def send(self, request: httpx.Request) -> httpx.Response:
        """Send and read the whole answer (the connection returns to the pool)."""
        response = self._current().handle_request(request)
        try:
            response.read()
        finally:
            response.close()
        return response

    def _current(self) -> httpx.BaseTransport:
        pool = self._pool
        if pool is not None and self._pid == os.getpid():
            return pool
        if self._pid != os.getpid():
            # Forked: the pool and its lock belong to the parent; forget both.
            self._pool = None
            self._lock = threading.Lock()
            self._pid = os.getpid()
        with self._lock:
            if self._pool is None:
                self._pool = self._build()
            return self._pool

    def _build(self) -> httpx.BaseTransport:
        transport: httpx.BaseTransport = _chosen(
            self.settings,
            _ViaClient,
            H1Transport,
            lambda s: httpx.HTTPTransport(
                uds=s.unix_socket, limits=_LIMITS, socket_options=s._socket_options()
            ),
        )
        return transport

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None and self._pid == os.getpid():
            pool.close()

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
    """The connection pool of one async SDK client, per process and per
    event loop (``asyncio.run`` twice in a worker must not reuse sockets
    of a closed loop)."""

    def __init__(self, settings: HttpSettings) -> None:
        self.settings = settings
        self._pool: httpx.AsyncBaseTransport | None = None
        self._pid = os.getpid()
        self._loop: weakref.ReferenceType[asyncio.AbstractEventLoop] | None = None

    async def send(self, request: httpx.Request) -> httpx.Response:
        response = await self._current().handle_async_request(request)
        try:
            await response.aread()
        finally:
            await response.aclose()
        return response

    def _current(self) -> httpx.AsyncBaseTransport:
        # No lock: the event loop runs this without interleaving.
        loop = _running_loop()
        pool = self._pool
        if pool is not None and self._pid == os.getpid() and self._same_loop(loop):
            return pool
        self._pid = os.getpid()
        self._loop = weakref.ref(loop) if loop is not None else None
        self._pool = self._build()
        return self._pool

    def _same_loop(self, loop: asyncio.AbstractEventLoop | None) -> bool:
        if loop is None or self._loop is None:
            return loop is None and self._loop is None
        return self._loop() is loop

    def _build(self) -> httpx.AsyncBaseTransport:
        transport: httpx.AsyncBaseTransport = _chosen(
            self.settings, _AsyncViaClient, AsyncH1Transport, _Lanes
        )
        return transport

    async def aclose(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None and self._pid == os.getpid() and self._same_loop(_running_loop()):
            await pool.aclose()

    def __getstate__(self) -> dict[str, Any]:
        return {"settings": self.settings}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["settings"])  # type: ignore[misc]


def _default_tls_context() -> ssl.SSLContext:
    """httpx's own default context (``verify=True``), built once."""
    return httpx.create_ssl_context(verify=True)


#: One lane carries one request at a time, so it never holds more than one
#: connection.
_LANE_LIMITS = httpx.Limits(max_connections=1, max_keepalive_connections=1)


class _Lanes(httpx.AsyncBaseTransport):
    """Keep-alive connections for the async client, one single-connection
    httpcore pool ("lane") per request in flight.

    Why not one shared ``AsyncHTTPTransport``: httpcore's async pool scans
    every connection for every queued request each time a request starts or
    ends (expiry checks that ask anyio for the raw socket, idle checks), so
    its CPU per request grows with the square of the concurrency: at 24
    requests in flight (a grader's default) that scan was the largest CPU
    cost of a request. Handing each request a free lane of its own makes
    that bookkeeping constant, keeps connection reuse the same (a lane's
    connection stays open between requests, and httpcore still drops one
    the server closed before reusing it), and needs no lock: the event loop
    does not interleave ``pop``/``append``.

    At most ``_LIMITS.max_keepalive_connections`` idle lanes are kept; extra
    ones are closed when their request ends, as the shared pool did.
    Unlike the shared pool there is no cap on lanes in flight (it allowed
    1024): bounding concurrency is the caller's job.
    """

    def __init__(self, settings: HttpSettings) -> None:
        self._settings = settings
        self._idle: list[httpx.AsyncHTTPTransport] = []
        self._open: set[httpx.AsyncHTTPTransport] = set()
        self._keep = _LIMITS.max_keepalive_connections or 0
        # A transport builds its own TLS context unless given one, and that
        # costs 10-20 ms of CPU (loading the CA bundle): all lanes share one,
        # built on first use, verifying exactly as httpx's default does.
        self._tls: ssl.SSLContext | None = None

    def _new_lane(self) -> httpx.AsyncHTTPTransport:
        s = self._settings
        if self._tls is None:
            self._tls = _default_tls_context()
        lane = httpx.AsyncHTTPTransport(
            verify=self._tls,
            uds=s.unix_socket,
            limits=_LANE_LIMITS,
            socket_options=s._socket_options(),
        )
        self._open.add(lane)
        return lane

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        lane = self._idle.pop() if self._idle else self._new_lane()
        try:
            response = await lane.handle_async_request(request)
            try:
                await response.aread()
            finally:
                await response.aclose()
        finally:
            if lane not in self._open:
                pass  # the pool was closed meanwhile, and this lane with it
            elif len(self._idle) < self._keep:
                self._idle.append(lane)
            else:
                self._open.discard(lane)
                await lane.aclose()
        return response

    async def aclose(self) -> None:
        lanes, self._open, self._idle = self._open, set(), []
        for lane in lanes:
            await lane.aclose()
