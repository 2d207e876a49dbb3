"""A lean HTTP/1.1 client for the async SDK over plain connections.

The daemon wire is plain HTTP/1.1 on loopback or a unix socket, and a GRPO
group sends hundreds of small requests on it at once. Through httpx's own
transport each one passes httpcore's connection state machine, anyio's
stream wrappers and h11's event objects: about a millisecond of CPU per
request here, in the trainer's process, as much as the server spends on it.
This module is an ``httpx.AsyncBaseTransport`` that writes a request in one
``write`` on an asyncio transport and reads the answer from the bytes as
they arrive, with the same failures as httpx's own (``httpx.ConnectError``
when nothing was sent, read and write timeouts, ``RemoteProtocolError``),
so retries and errors do not change. It works mounted on an
``httpx.AsyncClient`` like any transport; the SDK's pool calls it directly,
skipping the client's layers it does not need. The answer is parsed by a
small I/O-free parser instead of h11: ``benchmarks/bench_http_parse.py``
measures the difference, per answer and per request.

Only for ``http://`` and unix sockets without proxies: TLS, proxies and
anything unusual stay on httpx (see ``pool.AsyncPool``). Keep-alive
connections are reused; one that the server closed is noticed before reuse.
Bodies with ``Content-Length``, chunked bodies and bodies that end with the
connection are all read.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
from collections.abc import Generator
from typing import Any
from urllib.parse import urlsplit

import httpx

__all__ = ["AsyncH1Transport"]

_MAX_HEAD = 1 << 20  # a response's status line and headers, at most
_KEEP_IDLE = 128  # idle connections kept per client

if sys.version_info >= (3, 11):
    _timeout = asyncio.timeout
else:  # pragma: no cover - 3.10

    @contextlib.asynccontextmanager
    async def _timeout(delay: float | None):  # type: ignore[no-untyped-def]
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        fired = False

        def cancel() -> None:
            nonlocal fired
            fired = True
            task.cancel()

        handle = loop.call_later(delay, cancel) if delay is not None else None
        try:
            yield
        except asyncio.CancelledError:
            if fired:
                raise TimeoutError from None
            raise
        finally:
            if handle is not None:
                handle.cancel()


class _Stream(asyncio.Protocol):
    """One keep-alive connection: the bytes of the answer as they arrive,
    and whether the server closed its side.

    A protocol of its own rather than ``asyncio.StreamReader``: reuse needs
    to know that nothing unread is waiting (a server may close an idle
    connection, or write junk), which a reader does not say. And no
    ``asyncio.StreamWriter``: a collected one closes its transport, which
    unregisters the socket from the event loop's epoll instance, and after
    ``os.fork`` that instance is shared with the parent: a child that drops
    (or exits with) an inherited client would silence the parent's
    connections. A collected transport only closes its own fd."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.eof = False
        self._waiter: asyncio.Future[None] | None = None

    # -- asyncio.Protocol ---------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False  # (the transport closes itself)

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _wait(self) -> None:
        """Until more bytes, or the end, arrive."""
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    async def _more(self) -> None:
        """More bytes are needed: wait for them (ClosedEarly at the end)."""
        if self.eof:
            raise ClosedEarly
        await self._wait()

    # -- reading ------------------------------------------------------------

    async def read_until(self, sep: bytes) -> bytes:
        start = 0
        while True:
            data, start = cut_through(self.buffer, sep, start)
            if data is not None:
                return data
            await self._more()

    async def read_exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            await self._more()
        return cut(self.buffer, size)

    async def read_all(self) -> bytes:
        while not self.eof:
            await self._wait()
        data = bytes(self.buffer)
        self.buffer.clear()
        return data

    # -- reuse --------------------------------------------------------------

    @property
    def usable(self) -> bool:
        """Still open on both sides, with nothing unread."""
        transport = self.transport
        return (
            transport is not None and not transport.is_closing() and not (self.eof or self.buffer)
        )

    def close(self) -> None:
        if self.transport is not None:
            with contextlib.suppress(Exception):
                self.transport.close()


class ClosedEarly(Exception):
    """The server closed the connection before the answer was complete."""


class HeadTooLarge(Exception):
    """The answer's status line and headers exceed :data:`_MAX_HEAD`."""


#: What reading an answer can fail with, for ``read_failure``.
READ_FAILURES = (OSError, ClosedEarly, HeadTooLarge)


def cut(buffer: bytearray, size: int) -> bytes:
    """The first ``size`` bytes of ``buffer``, taken out of it."""
    data = bytes(buffer[:size])
    del buffer[:size]
    return data


def cut_through(buffer: bytearray, sep: bytes, start: int) -> tuple[bytes | None, int]:
    """Take ``buffer`` up to and including the first ``sep`` found from
    ``start`` on: ``(the bytes, 0)``; or ``(None, where to look next)`` when
    more bytes are needed. Both transports' reads (asyncio and blocking)
    search their buffers through this one function, so they cannot parse a
    head differently. Raises :class:`HeadTooLarge` past :data:`_MAX_HEAD`."""
    at = buffer.find(sep, start)
    if at >= 0:
        return cut(buffer, at + len(sep)), 0
    if len(buffer) > _MAX_HEAD:
        raise HeadTooLarge
    return None, max(0, len(buffer) - len(sep) + 1)


def read_failure(exc: BaseException, request: httpx.Request) -> httpx.TransportError:
    """The httpx error the retry policy knows for a failed read (both pools)."""
    if isinstance(exc, TimeoutError):
        return httpx.ReadTimeout("timed out waiting for the answer", request=request)
    if isinstance(exc, (ClosedEarly, ConnectionError)):
        return httpx.RemoteProtocolError(
            "the server closed the connection before it answered", request=request
        )
    if isinstance(exc, HeadTooLarge):
        return httpx.RemoteProtocolError("the answer's headers are too large", request=request)
    return httpx.ReadError(str(exc) or type(exc).__name__, request=request)


def connect_failure(exc: OSError, request: httpx.Request) -> httpx.TransportError:
    """The httpx error for a failed connect: nothing was sent (both pools)."""
    if isinstance(exc, TimeoutError):
        return httpx.ConnectTimeout("timed out connecting", request=request)
    return httpx.ConnectError(str(exc) or type(exc).__name__, request=request)


def plain_http_address(base_url: str) -> tuple[str, int]:
    """(host, port) of an ``http://`` URL; anything else is refused."""
    parts = urlsplit(base_url)
    if parts.scheme != "http":
        raise ValueError(f"the lean HTTP/1.1 client speaks plain http only, not {parts.scheme!r}")
    return parts.hostname or "localhost", parts.port or 80


class AsyncH1Transport(httpx.AsyncBaseTransport):
    """Keep-alive HTTP/1.1 connections to one plain-HTTP server (TCP or a
    unix socket), for one event loop."""

    def __init__(self, base_url: str, unix_socket: str | None = None) -> None:
        self.host, self.port = plain_http_address(base_url)
        self.unix_socket = unix_socket
        self._idle: list[_Stream] = []
        self._open: set[_Stream] = set()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeouts = request.extensions.get("timeout", {})
        conn = self._take_idle()
        if conn is None:
            conn = await self._connect(request, timeouts.get("connect"))
        try:
            # (no drain: requests are whole in memory already, and a server
            # that does not read them is caught by the read timeout)
            assert conn.transport is not None
            conn.transport.write(_head(request) + request.content)
            try:
                async with _timeout(timeouts.get("read")):
                    status, headers, body, keep = await _read_response(conn, request)
            except READ_FAILURES as exc:
                raise read_failure(exc, request) from exc
        except BaseException:
            self._drop(conn)  # (cancelled too: the answer may still be on its way)
            raise
        if keep and conn in self._open and len(self._idle) < _KEEP_IDLE:
            self._idle.append(conn)
        else:
            self._drop(conn)
        return httpx.Response(status, headers=headers, content=body, request=request)

    def _take_idle(self) -> _Stream | None:
        while self._idle:
            conn = self._idle.pop()
            if conn.usable:
                return conn
            self._drop(conn)
        return None

    async def _connect(self, request: httpx.Request, timeout: float | None) -> _Stream:
        loop = asyncio.get_running_loop()
        stream: _Stream
        try:
            async with _timeout(timeout):
                if self.unix_socket is not None:
                    _, stream = await loop.create_unix_connection(_Stream, self.unix_socket)
                else:
                    transport, stream = await loop.create_connection(_Stream, self.host, self.port)
                    sock = transport.get_extra_info("socket")
                    if sock is not None:
                        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as exc:
            raise connect_failure(exc, request) from exc
        self._open.add(stream)
        return stream

    def _drop(self, conn: _Stream) -> None:
        self._open.discard(conn)
        conn.close()

    async def aclose(self) -> None:
        conns, self._open, self._idle = self._open, set(), []
        for conn in conns:
            conn.close()
        await asyncio.sleep(0)  # (let the transports finish closing)


def _head(request: httpx.Request) -> bytes:
    url = request.url
    target = url.raw_path  # path and query, already encoded
    lines = [b"%s %s HTTP/1.1" % (request.method.encode("ascii"), target)]
    for name, value in request.headers.raw:
        lines.append(name + b": " + value)
    lines.append(b"")
    lines.append(b"")
    return b"\r\n".join(lines)


#: What the parser asks its driver for: bytes up to and including a
#: separator, exactly n bytes, or everything to the end of the connection.
Need = tuple[str, "bytes | int | None"]
Answer = tuple[int, list[tuple[bytes, bytes]], bytes, bool]


def parse_response(request: httpx.Request) -> Generator[Need, bytes, Answer]:
    """The answer to ``request``, parsed without doing any I/O (the async
    and the blocking pools drive it): status, headers, body, and whether
    the connection may be reused."""
    while True:
        head = yield ("until", b"\r\n\r\n")
        lines = head[:-4].split(b"\r\n")
        version, _, rest = lines[0].partition(b" ")
        code = rest[:3]
        if not version.startswith(b"HTTP/1.") or not code.isdigit():
            raise httpx.RemoteProtocolError(
                f"not an HTTP/1.x answer: {lines[0][:80]!r}", request=request
            )
        status = int(code)
        if status >= 200 or status == 101:
            break  # (1xx interim answers are skipped)
    headers: list[tuple[bytes, bytes]] = []
    length: int | None = None
    chunked = False
    close = version == b"HTTP/1.0"
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep:
            raise httpx.RemoteProtocolError(f"a malformed header: {line[:80]!r}", request=request)
        value = value.strip()
        headers.append((name, value))
        lowered = name.strip().lower()
        if lowered == b"content-length":
            if not value.isdigit():
                raise httpx.RemoteProtocolError("a malformed Content-Length", request=request)
            length = int(value)
        elif lowered == b"transfer-encoding":
            chunked = value.lower().endswith(b"chunked")
        elif lowered == b"connection":
            tokens = {t.strip().lower() for t in value.split(b",")}
            close = b"close" in tokens or (close and b"keep-alive" not in tokens)
    if request.method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        return status, headers, b"", not close
    if chunked:
        body = yield from _parse_chunked(request)
        # (drop Transfer-Encoding: the content handed on is decoded)
        headers = [(n, v) for n, v in headers if n.strip().lower() != b"transfer-encoding"]
    elif length is not None:
        body = yield ("exactly", length)
    else:
        body = yield ("all", None)  # to the end of the connection
        close = True
    return status, headers, body, not close


def _parse_chunked(request: httpx.Request) -> Generator[Need, bytes, bytes]:
    parts: list[bytes] = []
    while True:
        line = yield ("until", b"\r\n")
        size_text = line.split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise httpx.RemoteProtocolError(
                f"a malformed chunk size: {size_text[:40]!r}", request=request
            ) from None
        if size == 0:
            while (yield ("until", b"\r\n")) != b"\r\n":  # trailers
                pass
            return b"".join(parts)
        parts.append((yield ("exactly", size)))
        yield ("exactly", 2)


class ResponseReading:
    """:func:`parse_response` driven over a stream that has ``read_until``,
    ``read_exactly`` and ``read_all`` (the async connection's coroutines, or
    the blocking one's plain methods): :meth:`read` is the read the parser
    asks for next, :meth:`fed` hands it what that read answered."""

    __slots__ = ("_need", "_parser")

    def __init__(self, request: httpx.Request) -> None:
        self._parser = parse_response(request)
        self._need = next(self._parser)

    def read(self, stream: Any) -> Any:
        """The read asked for: its bytes, or (an async stream) the awaitable of them."""
        kind, arg = self._need
        if kind == "until":
            assert isinstance(arg, bytes)
            return stream.read_until(arg)
        if kind == "exactly":
            assert isinstance(arg, int)
            return stream.read_exactly(arg)
        return stream.read_all()

    def fed(self, data: bytes) -> Answer | None:
        """The answer once ``data`` completes it, else ``None`` (another read is due)."""
        try:
            self._need = self._parser.send(data)
        except StopIteration as done:
            answer: Answer = done.value
            return answer
        return None


async def _read_response(stream: _Stream, request: httpx.Request) -> Answer:
    reading = ResponseReading(request)
    while (answer := reading.fed(await reading.read(stream))) is None:
        pass
    return answer
