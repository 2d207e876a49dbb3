"""A fault-injecting HTTP/1.1 proxy on loopback, between a real client and a
real server.

:mod:`.faults` scripts answers at the httpx level (no socket at all). This
proxy is the other half: real TCP, real resets, real refused connections,
so what is checked is what a client meets on a bad network or in front of
a broken middlebox. It runs its own event loop on a daemon thread (sync
tests, scripts and async tests can all use it) and forwards each request
on a fresh upstream connection, so it always knows whether a request
reached the server.

Faults, chosen per request (:meth:`FaultProxy.inject` for the next matching
requests, :meth:`FaultProxy.randomize` for a random share of them):

* ``reset_before``: the request is read, never forwarded, the client's
  connection is reset (RST). Nothing ran, but the client cannot know.
* ``reset_after``: forwarded and answered by the server, then the client's
  connection is reset instead of answered. It ran; the client cannot know.
* ``delay``: forwarded; the answer is held ``delay_s`` (past the client's
  timeout), then written to whoever is still there.
* ``truncate``: the answer is cut halfway through its body, then closed.
* ``corrupt``: one byte of the answer's body becomes ``0xFF`` (never valid
  UTF-8, so never a valid JSON answer).
* ``at_capacity`` / ``draining``: a 503 in the daemon envelope, the request
  never forwarded (what a server says before it does any work).
* ``error_500_before`` / ``error_500_after``: an ambiguous 500
  ``internal_error``, with the request not forwarded / forwarded and run.

And one fault of the listener: :meth:`FaultProxy.refuse` closes it (new
connections are refused by the kernel, idle keep-alive ones are closed)
until told otherwise.

:meth:`FaultProxy.snapshot` returns the counts of what was seen, injected
and forwarded (a :class:`ProxyStats`); a POST forwarded twice with the same
bytes is the proof of a request executed twice (:meth:`ProxyStats.duplicates`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import random
import socket
import struct
import threading
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Final, Literal, get_args
from urllib.parse import urlsplit

import h11

__all__ = ["FAULTS", "Fault", "FaultProxy", "Forwarded", "ProxyStats", "route_of"]

Fault = Literal[
    "reset_before",
    "reset_after",
    "delay",
    "truncate",
    "corrupt",
    "at_capacity",
    "draining",
    "error_500_before",
    "error_500_after",
]
#: Every per-request fault, in the order tables print them.
FAULTS: Final[tuple[Fault, ...]] = get_args(Fault)
_READ: Final = 65536
_HOP_HEADERS: Final = frozenset({b"connection", b"keep-alive", b"transfer-encoding", b"host"})

Route = Literal["create", "exec", "one_shot", "delete", "health", "other"]
Match = Route | Literal["any", "post"]


def route_of(method: str, path: str) -> Route:
    """Which daemon call a request is (what faults and counts are keyed by)."""
    if method == "POST" and path == "/v1/sessions":
        return "create"
    if method == "POST" and path == "/v1/exec":
        return "one_shot"
    if method == "POST" and path.startswith("/v1/sessions/") and path.endswith("/exec"):
        return "exec"
    if method == "DELETE" and path.startswith("/v1/sessions/"):
        return "delete"
    if method == "GET" and path == "/v1/health":
        return "health"
    return "other"


def _matches(match: Match, route: Route) -> bool:
    if match == "any":
        return True
    if match == "post":
        return route in ("create", "exec", "one_shot")
    return match == route


@dataclass(frozen=True)
class Forwarded:
    """One request that reached the server, and the status it answered."""

    route: Route
    method: str
    path: str
    digest: str  # sha256 of method, path and body
    status: int


@dataclass
class ProxyStats:
    """What the proxy saw. Read it through :meth:`FaultProxy.snapshot`."""

    seen: Counter[str] = field(default_factory=Counter)  # route -> requests read
    injected: Counter[str] = field(default_factory=Counter)  # fault -> times
    forwarded: list[Forwarded] = field(default_factory=list)
    connections: int = 0
    refusals: int = 0  # times the listener was closed

    def copy(self) -> ProxyStats:
        return ProxyStats(
            Counter(self.seen),
            Counter(self.injected),
            list(self.forwarded),
            self.connections,
            self.refusals,
        )

    def forwarded_to(self, *routes: Route) -> list[Forwarded]:
        return [f for f in self.forwarded if not routes or f.route in routes]

    def duplicates(self, *routes: Route) -> int:
        """POSTs (of ``routes``, default all) that reached the server more
        than once with the same bytes: requests executed twice. Meaningful
        where every logical request has bytes of its own (execs carrying a
        seed of their own; one create at a time)."""
        counts = Counter(
            f.digest
            for f in self.forwarded
            if f.method == "POST" and (not routes or f.route in routes)
        )
        return sum(n - 1 for n in counts.values() if n > 1)

    def since(self, before: ProxyStats) -> ProxyStats:
        """What happened after ``before`` was taken."""
        return ProxyStats(
            self.seen - before.seen,
            self.injected - before.injected,
            self.forwarded[len(before.forwarded) :],
            self.connections - before.connections,
            self.refusals - before.refusals,
        )


@dataclass
class _Planned:
    fault: Fault
    match: Match
    times: int
    delay_s: float | None = None


class FaultProxy:
    """``FaultProxy("http://127.0.0.1:8080")``: listens on a free loopback
    port (:attr:`url`) and forwards to ``upstream`` (a loopback URL), with
    the faults it is told to inject. A context manager; :meth:`stop` closes
    every connection it holds."""

    def __init__(self, upstream: str, *, delay_s: float = 3.0) -> None:
        parts = urlsplit(upstream)
        if parts.hostname not in ("127.0.0.1", "localhost", "::1") or parts.port is None:
            raise ValueError(f"upstream must be a loopback URL with a port, not {upstream!r}")
        self.upstream = (parts.hostname, parts.port)
        self.delay_s = delay_s
        self.port = 0
        self._plan: list[_Planned] = []
        self._random: tuple[float, tuple[Fault, ...], Match, random.Random] | None = None
        self._stats = ProxyStats()
        self._lock = threading.Lock()
        self._unsettled = 0  # requests read whose forward is not recorded yet
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._switch: asyncio.Lock | None = None
        self._clients: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    # -- control (any thread) ---------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def inject(
        self, fault: Fault, *, times: int = 1, match: Match = "any", delay_s: float | None = None
    ) -> None:
        """The next ``times`` requests of ``match`` get ``fault`` (planned
        faults apply in the order given, before any random one); ``delay_s``
        overrides the proxy's delay for these."""
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; expected one of {', '.join(FAULTS)}")
        with self._lock:
            self._plan.append(_Planned(fault, match, times, delay_s))

    def randomize(
        self,
        rate: float,
        faults: Iterable[Fault] = FAULTS,
        *,
        match: Match = "any",
        seed: int = 0,
    ) -> None:
        """Each request of ``match`` gets a fault drawn from ``faults`` with
        probability ``rate`` (``rate=0`` turns this off)."""
        chosen = tuple(faults)
        for f in chosen:
            if f not in FAULTS:
                raise ValueError(f"unknown fault {f!r}")
        with self._lock:
            self._random = (rate, chosen, match, random.Random(seed)) if rate > 0 else None

    def clear(self) -> None:
        """No more faults (planned or random)."""
        with self._lock:
            self._plan.clear()
            self._random = None

    def snapshot(self) -> ProxyStats:
        with self._lock:
            return self._stats.copy()

    @property
    def unsettled(self) -> int:
        """Requests read whose fate is not in the stats yet: forwarded and
        still waiting for the server's answer, or about to be refused. A
        server that counts nothing in flight may still have such a request
        on its way, or have answered one the proxy has not recorded: a
        snapshot is complete only once this is 0."""
        with self._lock:
            return self._unsettled

    def refuse(self, on: bool = True) -> None:
        """Close the listener (new connections are refused, idle ones are
        closed) or open it again on the same port."""
        self._call(self._set_refusing(on))

    # -- lifecycle ----------------------------------------------------------

    def start(self) -> FaultProxy:
        if self._thread is not None:
            return self
        loop = asyncio.new_event_loop()
        ready: Future[None] = Future()

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._listen())
                ready.set_result(None)
            except BaseException as exc:
                ready.set_exception(exc)
                return
            loop.run_forever()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

        self._loop = loop
        self._thread = threading.Thread(target=run, name="collimate-fault-proxy", daemon=True)
        self._thread.start()
        ready.result(timeout=30)
        return self

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        with contextlib.suppress(RuntimeError):
            self._call(self._shutdown())
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
        self._loop = self._thread = None

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _call(self, coro: Any) -> Any:
        loop = self._loop
        if loop is None:
            raise RuntimeError("the proxy is not started")
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout=60)

    # -- the loop's side ------------------------------------------------------

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(
            self._serve, "127.0.0.1", self.port, reuse_address=True, backlog=1024
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def _set_refusing(self, on: bool) -> None:
        if self._switch is None:
            self._switch = asyncio.Lock()
        async with self._switch:  # two threads may ask at once: one switch at a time
            await self._switch_listener(on)

    async def _switch_listener(self, on: bool) -> None:
        if on and self._server is not None:
            server, self._server = self._server, None
            server.close()
            for writer in list(self._clients):
                writer.close()
            # (3.12+ waits here for the connections too: closed just above)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(server.wait_closed(), 5.0)
            with self._lock:
                self._stats.refusals += 1
        elif not on and self._server is None:
            await self._listen()

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in list(self._clients):
            writer.transport.abort()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _pick(self, route: Route) -> tuple[Fault | None, float]:
        with self._lock:
            self._stats.seen[route] += 1
            for planned in self._plan:
                if _matches(planned.match, route):
                    planned.times -= 1
                    if planned.times <= 0:
                        self._plan.remove(planned)
                    self._stats.injected[planned.fault] += 1
                    delay = self.delay_s if planned.delay_s is None else planned.delay_s
                    return planned.fault, delay
            if self._random is not None:
                rate, faults, match, rng = self._random
                if _matches(match, route) and rng.random() < rate:
                    fault = rng.choice(faults)
                    self._stats.injected[fault] += 1
                    return fault, self.delay_s
        return None, 0.0

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._clients.add(writer)
        with self._lock:
            self._stats.connections += 1
        try:
            await self._requests(reader, writer)
        except (ConnectionError, OSError, h11.ProtocolError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            pass  # the proxy is stopping: the connection just ends
        finally:
            self._tasks.discard(task)
            self._clients.discard(writer)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _requests(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = h11.Connection(h11.SERVER)
        while True:
            got = await _read_message(conn, reader)
            if got is None:
                return
            head, body = got
            assert isinstance(head, h11.Request)
            method = head.method.decode("ascii")
            path = head.target.decode("latin-1").partition("?")[0]
            route = route_of(method, path)
            with self._lock:
                self._unsettled += 1
            try:
                fault, delay_s = self._pick(route)
                if fault == "reset_before":
                    _reset(writer)
                    return
                if fault not in ("at_capacity", "draining", "error_500_before"):
                    status, headers, payload = await self._forward(head, body)
                    with self._lock:
                        self._stats.forwarded.append(
                            Forwarded(route, method, path, _digest(method, path, body), status)
                        )
            finally:
                with self._lock:
                    self._unsettled -= 1
            if fault in ("at_capacity", "draining", "error_500_before"):
                writer.write(_answer(conn, *_refusal(fault)))
                await writer.drain()
            else:
                if fault == "reset_after":
                    _reset(writer)
                    return
                if fault == "error_500_after":
                    status, headers, payload = _refusal(fault)
                if fault == "delay":
                    await asyncio.sleep(delay_s)
                data = _answer(conn, status, headers, payload)
                if fault == "truncate":
                    writer.write(data[: len(data) - max(1, len(payload) // 2)])
                    await writer.drain()
                    return
                if fault == "corrupt" and payload:
                    at = len(data) - len(payload) + len(payload) // 2
                    data = data[:at] + b"\xff" + data[at + 1 :]
                writer.write(data)
                await writer.drain()
            if conn.our_state is h11.MUST_CLOSE:
                return
            conn.start_next_cycle()

    async def _forward(
        self, head: h11.Request, body: bytes
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """Send one request upstream on a connection of its own; its answer."""
        reader, writer = await asyncio.open_connection(*self.upstream)
        try:
            conn = h11.Connection(h11.CLIENT)
            headers = [(k, v) for k, v in head.headers if k.lower() not in _HOP_HEADERS]
            headers += [
                (b"host", f"{self.upstream[0]}:{self.upstream[1]}".encode()),
                (b"connection", b"close"),
            ]
            if body and not any(k.lower() == b"content-length" for k, _ in headers):
                headers.append((b"content-length", str(len(body)).encode()))
            out = conn.send(h11.Request(method=head.method, target=head.target, headers=headers))
            out = (out or b"") + (conn.send(h11.Data(data=body)) if body else b"")
            out += conn.send(h11.EndOfMessage()) or b""
            writer.write(out)
            await writer.drain()
            got = await _read_message(conn, reader)
            if got is None:
                raise ConnectionError("upstream closed without answering")
            response, payload = got
            assert isinstance(response, h11.Response)
            kept = [(k, v) for k, v in response.headers if k.lower() not in _HOP_HEADERS]
            kept = [(k, v) for k, v in kept if k.lower() != b"content-length"]
            return response.status_code, kept, payload
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


async def _read_message(
    conn: h11.Connection, reader: asyncio.StreamReader
) -> tuple[h11.Request | h11.Response, bytes] | None:
    """One whole message (head and body), or ``None`` at a clean close."""
    head: h11.Request | h11.Response | None = None
    chunks: list[bytes] = []
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(await reader.read(_READ))
            continue
        if isinstance(event, h11.ConnectionClosed):
            if head is None:
                return None
            raise ConnectionError("closed mid-message")
        if isinstance(event, (h11.Request, h11.Response)):
            head = event
        elif isinstance(event, h11.Data):
            chunks.append(bytes(event.data))
        elif isinstance(event, h11.EndOfMessage):
            assert head is not None
            return head, b"".join(chunks)


def _answer(
    conn: h11.Connection, status: int, headers: list[tuple[bytes, bytes]], payload: bytes
) -> bytes:
    headers = [*headers, (b"content-length", str(len(payload)).encode())]
    out = conn.send(h11.Response(status_code=status, headers=headers)) or b""
    out += conn.send(h11.Data(data=payload)) or b""
    return out + (conn.send(h11.EndOfMessage()) or b"")


def _refusal(fault: Fault) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    if fault == "at_capacity":
        status, code, msg = 503, "at_capacity", "at capacity (injected by the fault proxy)"
    elif fault == "draining":
        status, code, msg = 503, "draining", "node is draining (injected by the fault proxy)"
    else:
        status, code, msg = 500, "internal_error", "internal error (injected by the fault proxy)"
    body = json.dumps({"error": msg, "error_code": code}).encode()
    return status, [(b"content-type", b"application/json")], body


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP RST (SO_LINGER 0), not a FIN."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def _digest(method: str, path: str, body: bytes) -> str:
    return hashlib.sha256(method.encode() + b" " + path.encode() + b"\n" + body).hexdigest()
