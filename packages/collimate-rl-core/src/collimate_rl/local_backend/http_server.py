"""HTTP/1.1 over asyncio streams with ``h11``: keep-alive, JSON bodies, and
client-disconnect detection.

One coroutine per connection, no threads. While a request is being handled
the connection keeps reading: end-of-file means the client is gone, so the
handler task is cancelled (the engine then kills the exec's process tree)
instead of running to completion for nobody. Bytes of a pipelined next
request are buffered in ``h11`` until the current answer is written.

Hostile clients are bounded: a body announced or sent over ``max_body`` is
answered 413 (before it is read, when its ``Content-Length`` says so); a
request (headers and body) not complete within ``idle_timeout_s`` is cut (a
slow-loris client holds a connection that long at most); and past
``max_connections`` open connections the longest-idle keep-alive one is
shed, or, with none idle, the new one is answered 503 and closed, so idle
sockets cannot exhaust the server's file descriptors.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import resource
import time
from collections.abc import Awaitable, Callable
from http import HTTPStatus

import h11

from ..__about__ import __version__
from .routing import Request, Response, Upgrade

log = logging.getLogger("collimate_rl.local_backend.http")

_READ_SIZE = 65536
_SERVER_HEADER = f"collimate-rl-local/{__version__}".encode()

Dispatch = Callable[[Request], Awaitable[Response]]


def _reason(status: int) -> bytes:
    try:
        return HTTPStatus(status).phrase.encode()
    except ValueError:
        return b""


def encode_json(body: object) -> bytes:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


class _ClientGone(Exception):
    """The peer closed the connection."""


class HttpConnection:
    """One client connection: read requests, dispatch, write answers."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        dispatch: Dispatch,
        *,
        max_body: int,
        idle_timeout_s: float = 300.0,
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.dispatch = dispatch
        self.max_body = max_body
        self.idle_timeout_s = idle_timeout_s
        self.conn = h11.Connection(h11.SERVER, max_incomplete_event_size=64 * 1024)
        self._pending_read: asyncio.Task[bytes] | None = None
        self._handler: asyncio.Task[Response] | None = None
        self._eof = False
        self.busy = False  # a request is being handled or answered
        self.idle_since = time.monotonic()
        self.closing = False  # the server is stopping: finish the current answer, then close
        self.upgraded = False  # switched protocols (a tunnel): no longer HTTP
        # accepted as the server began to stop: one request is still read and answered
        self.one_more = False
        peer = writer.get_extra_info("peername")
        self.peer = peer[0] if isinstance(peer, tuple) and peer else "unix"

    async def _read(self) -> bytes:
        if self._pending_read is None:
            self._pending_read = asyncio.ensure_future(self.reader.read(_READ_SIZE))
        try:
            data = await self._pending_read
        finally:
            if self._pending_read.done():
                self._pending_read = None
        return data

    async def _next_event(self) -> object:
        while True:
            event = self.conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            if self._eof:
                raise _ClientGone
            data = await self._read()
            if not data:
                self._eof = True
            self.conn.receive_data(data)

    async def _read_request(self) -> Request | None:
        # An idle keep-alive connection, or a client that stalls (or
        # trickles) its headers or body, is closed after idle_timeout_s, so
        # dead and slow-loris clients cannot pile up fds.
        idle = asyncio.get_running_loop().call_later(self.idle_timeout_s, self.writer.close)
        try:
            return await self._read_whole_request()
        finally:
            idle.cancel()

    async def _read_whole_request(self) -> Request | None:
        event = await self._next_event()
        if isinstance(event, h11.ConnectionClosed):
            return None
        if not isinstance(event, h11.Request):
            raise h11.RemoteProtocolError(f"unexpected {type(event).__name__}")
        self.busy = True
        announced = dict(event.headers).get(b"content-length")
        if announced is not None and int(announced) > self.max_body:
            raise h11.RemoteProtocolError(
                f"request body too large: {int(announced)} bytes, at most {self.max_body}",
                error_status_hint=413,
            )
        if self.conn.they_are_waiting_for_100_continue:
            # curl sends bodies over 1 KiB only after a 100 (or a 1 s pause)
            self.writer.write(
                self.conn.send(h11.InformationalResponse(status_code=100, headers=[])) or b""
            )
        chunks: list[bytes] = []
        size = 0
        while True:
            ev = await self._next_event()
            if isinstance(ev, h11.Data):
                size += len(ev.data)
                if size > self.max_body:
                    raise h11.RemoteProtocolError("request body too large", error_status_hint=413)
                chunks.append(bytes(ev.data))
            elif isinstance(ev, h11.EndOfMessage):
                break
            elif isinstance(ev, h11.ConnectionClosed):
                raise _ClientGone
        target = event.target.decode("latin-1")
        path, _, query = target.partition("?")
        return Request(
            method=event.method.decode("ascii").upper(),
            path=path,
            query=query,
            headers={k.decode("latin-1").lower(): v.decode("latin-1") for k, v in event.headers},
            body=b"".join(chunks),
            peer=self.peer,
        )

    async def _await_or_disconnect(self, handler: asyncio.Task[Response]) -> Response | None:
        """The handler's answer, or ``None`` (handler cancelled) if the client left."""
        buffered = 0
        while not handler.done():
            if self._eof or buffered > self.max_body:
                await asyncio.wait({handler})
                break
            if self._pending_read is None:
                self._pending_read = asyncio.ensure_future(self.reader.read(_READ_SIZE))
            done, _ = await asyncio.wait(
                {handler, self._pending_read}, return_when=asyncio.FIRST_COMPLETED
            )
            if self._pending_read in done:
                read, self._pending_read = self._pending_read, None
                try:
                    data = read.result()
                except (ConnectionError, OSError):
                    data = b""
                if not data:
                    self._eof = True
                    handler.cancel()
                    with contextlib.suppress(BaseException):
                        await handler
                    return None
                buffered += len(data)
                self.conn.receive_data(data)
        return handler.result()

    def _send(self, response: Response) -> None:
        body = encode_json(response.body)
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"server", _SERVER_HEADER),
        ]
        headers.extend((k.encode(), v.encode()) for k, v in response.headers)
        if self.closing:
            headers.append((b"connection", b"close"))
        out = self.conn.send(
            h11.Response(
                status_code=response.status, headers=headers, reason=_reason(response.status)
            )
        )
        out = (out or b"") + (self.conn.send(h11.Data(data=body)) or b"")
        out += self.conn.send(h11.EndOfMessage()) or b""
        self.writer.write(out)

    async def _switch(self, response: Response, upgrade: Upgrade) -> None:
        """Answer 101 and hand the raw connection to ``upgrade`` until it
        returns. Bytes already received past the request (h11's trailing
        data, a read in flight) are the stream's first bytes."""
        headers = [(k.encode(), v.encode()) for k, v in response.headers]
        headers.append((b"server", _SERVER_HEADER))
        self.writer.write(
            self.conn.send(h11.InformationalResponse(status_code=101, headers=headers)) or b""
        )
        await self.writer.drain()
        self.upgraded = True
        early, _closed = self.conn.trailing_data
        await upgrade(_SwitchedStream(self, bytes(early)))

    def _send_protocol_error(self, exc: h11.RemoteProtocolError) -> None:
        if self.conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            return
        status = exc.error_status_hint or 400
        body = {"error": f"bad HTTP request: {exc}", "error_code": "bad_request"}
        with contextlib.suppress(h11.LocalProtocolError):
            self.closing = True
            self._send(Response(status, body))

    async def serve(self) -> None:
        try:
            while not self.closing or self.one_more:
                self.one_more = False
                try:
                    request = await self._read_request()
                except h11.RemoteProtocolError as exc:
                    self._send_protocol_error(exc)
                    await self.writer.drain()
                    break
                if request is None:
                    break
                handler = self._handler = asyncio.ensure_future(self.dispatch(request))
                response = await self._await_or_disconnect(handler)
                self._handler = None
                if response is None:
                    break
                if response.upgrade is not None and response.status == 101:
                    await self._switch(response, response.upgrade)
                    break
                if "upgrade" in request.headers:
                    # a refused upgrade ends the connection: the client is
                    # waiting for the other protocol, not for a next answer
                    self.closing = True
                self._send(response)
                await self.writer.drain()
                self.busy = False
                self.idle_since = time.monotonic()
                if self.conn.our_state is h11.MUST_CLOSE or self.closing:
                    break
                self.conn.start_next_cycle()
        except (_ClientGone, ConnectionError, OSError):
            pass
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("connection handler failed")
        finally:
            self.busy = False
            if self._pending_read is not None:
                self._pending_read.cancel()
            if self._handler is not None and not self._handler.done():
                # The server is stopping under us: the work dies with the connection.
                self._handler.cancel()
                with contextlib.suppress(BaseException):
                    await self._handler
            self.writer.close()
            with contextlib.suppress(Exception):
                await self.writer.wait_closed()


class _SwitchedStream:
    """The client's connection after a 101: its bytes, raw."""

    def __init__(self, conn: HttpConnection, early: bytes) -> None:
        self._conn = conn
        self._early = early

    async def read(self) -> bytes:
        if self._early:
            data, self._early = self._early, b""
            return data
        if self._conn._eof:
            return b""
        try:
            data = await self._conn._read()
        except (ConnectionError, OSError):
            data = b""
        if not data:
            self._conn._eof = True
        return data

    def write(self, data: bytes) -> None:
        self._conn.writer.write(data)

    async def drain(self) -> None:
        await self._conn.writer.drain()


def default_max_connections() -> int:
    """Half the soft fd limit (at least 64)."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 32768
    return max(64, soft // 2)


class HttpServer:
    """Accepts connections on any number of listeners and tracks them so a
    stop can let busy answers finish and close idle keep-alive connections."""

    def __init__(
        self,
        dispatch: Dispatch,
        *,
        max_body: int = 64 * 1024 * 1024,
        idle_timeout_s: float = 300.0,
        max_connections: int | None = None,
    ) -> None:
        self.dispatch = dispatch
        self.max_body = max_body
        self.idle_timeout_s = idle_timeout_s
        #: open connections before idle ones are shed (default: half the
        #: process's fd limit, the other half left to clones and files)
        self.max_connections = max_connections or default_max_connections()
        self.shed = 0  # connections closed or refused to stay within max_connections
        self._connections: dict[asyncio.Task[None], HttpConnection] = {}
        self._closing = False  # draining or stopping: every answer is the connection's last

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = HttpConnection(
            reader,
            writer,
            self.dispatch,
            max_body=self.max_body,
            idle_timeout_s=self.idle_timeout_s,
        )
        # Accepted just before the listener closed: its request (already on
        # its way) is read and answered (a stopping service says
        # ``draining``), never met with a bare close the client could not
        # tell from a crash; then the connection ends.
        conn.closing = conn.one_more = self._closing
        if len(self._connections) >= self.max_connections and not self._shed_one_idle():
            self.shed += 1
            conn.closing = True
            err = {"error": "too many open connections, retry later", "error_code": "at_capacity"}
            with contextlib.suppress(Exception):
                conn._send(Response(503, err))
                await writer.drain()
            writer.close()
            return
        task = asyncio.current_task()
        assert task is not None
        self._connections[task] = conn
        try:
            await conn.serve()
        finally:
            self._connections.pop(task, None)

    def _shed_one_idle(self) -> bool:
        """Close the longest-idle keep-alive connection, if any is idle."""
        idle = [c for c in self._connections.values() if not c.busy and not c.closing]
        if not idle:
            return False
        oldest = min(idle, key=lambda c: c.idle_since)
        oldest.closing = True
        oldest.writer.close()
        self.shed += 1
        return True

    def begin_drain(self) -> None:
        """Make every answer from now on the last of its connection (sent
        with ``Connection: close``), idle keep-alive connections included.

        Why not close the idle ones now: a client may be writing a request
        on one at this very moment, and a request met by a bare close is one
        the client cannot tell from a crash mid-exec (it must not send it
        again). Left open, that request is answered (a draining service says
        ``draining``, which proves nothing ran) and the connection then ends
        cleanly; see :meth:`wait_clients_leave`."""
        self._closing = True
        for conn in self._connections.values():
            conn.closing = conn.one_more = True

    async def wait_clients_leave(self, linger_s: float) -> None:
        """After a drain: wait (at most ``linger_s``) for the connections
        still open to be closed by their clients, or to have answered their
        last request. A client that sent nothing for that long is not about
        to; its idle connection is closed by the stop that follows."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + linger_s
        while pending := list(self._connections):
            left = deadline - loop.time()
            if left <= 0:
                return
            await asyncio.wait(pending, timeout=left)

    async def close_connections(self, grace_s: float) -> None:
        """Close idle connections now; give busy ones ``grace_s`` to answer,
        then cut them (their handlers see the disconnect and are cancelled).
        Closing the transport, not cancelling tasks, keeps asyncio quiet."""
        self._closing = True
        for conn in list(self._connections.values()):
            conn.closing = True
            if not conn.busy or conn.upgraded:  # a tunnel has no answer to finish
                conn.writer.close()
        deadline = asyncio.get_running_loop().time() + grace_s
        while pending := list(self._connections):
            left = max(0.0, deadline - asyncio.get_running_loop().time())
            _, still = await asyncio.wait(pending, timeout=left)
            for task in still:
                busy = self._connections.get(task)
                if busy is not None:
                    busy.writer.transport.abort()
            if still:
                await asyncio.wait(still, timeout=10.0)
                break
            await asyncio.sleep(0)  # (a connection accepted last may start now)
