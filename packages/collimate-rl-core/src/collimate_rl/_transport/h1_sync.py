"""The blocking twin of ``h1.AsyncH1Transport``: the lean HTTP/1.1 client
for the sync SDK over plain connections (the daemon, TCP or a unix socket),
an ``httpx.BaseTransport``.

``grade_batch`` runs its requests on threads, and through httpx's transport
each one also pays httpcore's connection-pool bookkeeping under a lock that
all those threads share. Here a request is one ``sendall`` and the answer a
few ``recv`` calls, parsed by the same I/O-free parser as the async pool
(``h1.parse_response``); failures are the httpx errors the retry policy
knows. Connections are kept alive and shared between threads; one the
server closed while idle is noticed before reuse.
"""

from __future__ import annotations

import contextlib
import socket
import threading

import httpx

from .h1 import (
    READ_FAILURES,
    Answer,
    ClosedEarly,
    ResponseReading,
    _head,
    connect_failure,
    cut,
    cut_through,
    plain_http_address,
    read_failure,
)

__all__ = ["H1Transport"]

_KEEP_IDLE = 128  # idle connections kept per client
_RECV = 1 << 16


class _SyncConnection:
    __slots__ = ("buffer", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()

    @property
    def usable(self) -> bool:
        """Open, with nothing unread (peeked without blocking)."""
        if self.buffer:
            return False
        try:
            # (non-blocking for the peek: with a timeout set, Python would
            # wait that long for a byte instead of saying there is none)
            self.sock.settimeout(0)
            self.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except BlockingIOError:
            return True  # open and quiet
        except OSError:
            return False
        return False  # closed (b"") or unexpected bytes

    def _fill(self) -> bool:
        data = self.sock.recv(_RECV)
        self.buffer += data
        return bool(data)

    def read_until(self, sep: bytes) -> bytes:
        start = 0
        while True:
            data, start = cut_through(self.buffer, sep, start)
            if data is not None:
                return data
            if not self._fill():
                raise ClosedEarly

    def read_exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            if not self._fill():
                raise ClosedEarly
        return cut(self.buffer, size)

    def read_all(self) -> bytes:
        while self._fill():
            pass
        data = bytes(self.buffer)
        self.buffer.clear()
        return data

    def read_answer(self, request: httpx.Request) -> Answer:
        reading = ResponseReading(request)
        while (answer := reading.fed(reading.read(self))) is None:
            pass
        return answer

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


class H1Transport(httpx.BaseTransport):
    """Keep-alive HTTP/1.1 connections to one plain-HTTP server, shared by
    the threads of one process."""

    def __init__(self, base_url: str, unix_socket: str | None = None) -> None:
        self.host, self.port = plain_http_address(base_url)
        self.unix_socket = unix_socket
        self._idle: list[_SyncConnection] = []
        self._lock = threading.Lock()
        self._closed = False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        timeouts = request.extensions.get("timeout", {})
        conn = self._take_idle()
        if conn is None:
            conn = self._connect(request, timeouts.get("connect"))
        try:
            try:
                conn.sock.settimeout(timeouts.get("write"))
                conn.sock.sendall(_head(request) + request.content)
            except TimeoutError as exc:
                raise httpx.WriteTimeout("timed out writing the request", request=request) from exc
            except OSError as exc:
                raise httpx.WriteError(str(exc) or type(exc).__name__, request=request) from exc
            try:
                conn.sock.settimeout(timeouts.get("read"))
                status, headers, body, keep = conn.read_answer(request)
            except READ_FAILURES as exc:
                raise read_failure(exc, request) from exc
        except BaseException:
            conn.close()
            raise
        with self._lock:
            kept = keep and not self._closed and len(self._idle) < _KEEP_IDLE
            if kept:
                self._idle.append(conn)
        if not kept:
            conn.close()
        return httpx.Response(status, headers=headers, content=body, request=request)

    def _take_idle(self) -> _SyncConnection | None:
        while True:
            with self._lock:
                if not self._idle:
                    return None
                conn = self._idle.pop()
            if conn.usable:
                return conn
            conn.close()

    def _connect(self, request: httpx.Request, timeout: float | None) -> _SyncConnection:
        try:
            if self.unix_socket is not None:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    sock.settimeout(timeout)
                    sock.connect(self.unix_socket)
                except BaseException:
                    sock.close()
                    raise
            else:
                sock = socket.create_connection((self.host, self.port), timeout=timeout)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as exc:
            raise connect_failure(exc, request) from exc
        return _SyncConnection(sock)

    def close(self) -> None:
        with self._lock:
            self._closed = True  # (connections in use are closed when their answer is in)
            conns, self._idle = self._idle, []
        for conn in conns:
            conn.close()
