"""Reach a sandbox's service from this machine: a local port forwarded to a
guest port over the gateway's connect tunnel.

A connect URL (``connect_url``) is a short-lived ``ws://`` / ``wss://``
address whose token is bound to one sandbox and one exposed guest port; the
tunnel behind it carries raw bytes. Most software wants a ``host:port``
rather than a WebSocket, so :class:`PortForward` listens on a loopback port
here and, for every connection it accepts, opens a tunnel of its own (with a
freshly minted URL) and pipes the two together: HTTP, a WebSocket, a
database's wire, anything over TCP::

    with client.session("web") as sess, sess.port_forward(8000) as fwd:
        urllib.request.urlopen(fwd.url + "/health")

Nothing is listening but the loopback port, and only while the forward is
open: :meth:`PortForward.close` stops the listener, ends every tunnel and
waits for its threads. Threads (not an event loop) so that the forward works
the same under blocking and async code, and never depends on a loop the
caller might block.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from ._transport import gateway_calls as routes
from ._transport.pool import HttpSettings
from ._transport.send._sync import SyncHTTP
from ._websocket import (
    BINARY,
    CLOSE,
    CONTINUATION,
    PING,
    PONG,
    TEXT,
    FrameReader,
    accept_key,
    encode_frame,
    new_key,
)
from .retry import RetryPolicy

__all__ = ["ConnectMinter", "PortForward", "TunnelSocket", "open_port_forward"]

log = logging.getLogger("collimate_rl.tunnel")

_CHUNK = 64 * 1024
#: a URL minted to check the forward at open is used for the first
#: connection only if that comes this soon (else a fresh one is minted)
_FIRST_URL_FRESH_S = 60.0
#: how long close() waits for the forward's threads to end
_JOIN_S = 5.0


class TunnelSocket:
    """One tunnel: the client side of the WebSocket behind a connect URL,
    carrying raw bytes (RFC 6455 framing from :mod:`collimate_rl._websocket`)."""

    def __init__(self, url: str, *, timeout: float = 30.0) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("ws", "wss"):
            raise ValueError(f"a connect URL is ws:// or wss://, got {url!r:.80}")
        secure = parts.scheme == "wss"
        host = parts.hostname or ""
        port = parts.port or (443 if secure else 80)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        sock = socket.create_connection((host, port), timeout=timeout)
        try:
            if secure:
                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
            self._sock = sock
            self._frames = FrameReader(expect_masked=False)
            self._handshake(f"{host}:{port}", target)
            sock.settimeout(None)  # a tunnel may sit idle as long as its peers do
        except BaseException:
            sock.close()
            raise
        self._send_lock = threading.Lock()
        self.closed = False

    def _handshake(self, host: str, target: str) -> None:
        key = new_key()
        self._sock.sendall(
            (
                f"GET {target} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                "Sec-WebSocket-Version: 13\r\n\r\n"
            ).encode("latin-1")
        )
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self._sock.recv(4096)
            if not chunk:
                raise ConnectionError("the tunnel closed during its handshake")
            head += chunk
            if len(head) > 64 * 1024:
                raise ConnectionError("the tunnel's handshake answer is too long")
        head, _, rest = head.partition(b"\r\n\r\n")
        status, *lines = head.decode("latin-1").split("\r\n")
        if status.split(" ")[1:2] != ["101"]:
            raise ConnectionError(f"the tunnel was refused: {status} {rest[:200]!r}")
        headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines)}
        if headers.get("sec-websocket-accept") != accept_key(key):
            raise ConnectionError("the tunnel answered with a wrong Sec-WebSocket-Accept")
        self._frames.feed(rest)

    def send(self, data: bytes) -> None:
        """Send ``data`` to the guest port (one masked binary frame)."""
        with self._send_lock:
            self._sock.sendall(encode_frame(BINARY, data, mask=True))

    def recv(self) -> bytes | None:
        """The next bytes from the guest port; ``None`` once the tunnel ends."""
        while True:
            frame = self._frames.next_frame()
            if frame is None:
                data = self._sock.recv(_CHUNK)
                if not data:
                    return None
                self._frames.feed(data)
                continue
            if frame.opcode in (BINARY, TEXT, CONTINUATION):
                if frame.payload:
                    return frame.payload
            elif frame.opcode == PING:
                with self._send_lock:
                    self._sock.sendall(encode_frame(PONG, frame.payload, mask=True))
            elif frame.opcode == CLOSE:
                return None

    def shutdown(self) -> None:
        """Wake a thread blocked in :meth:`recv` (it then sees the end)."""
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        """Say goodbye (a close frame) and close the socket. Idempotent."""
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(OSError), self._send_lock:
            self._sock.sendall(encode_frame(CLOSE, b"\x03\xe8", mask=True))
        with contextlib.suppress(OSError):
            self._sock.close()


class ConnectMinter:
    """Mints connect URLs for one port of one sandbox, callable from any
    thread: a blocking sender of its own over the gateway client's settings
    (key, origin, retry policy), so that an async client's event loop is
    never needed (nor blocked) by a forward's threads."""

    def __init__(
        self,
        settings: HttpSettings,
        policy: RetryPolicy,
        sandbox_id: str,
        port: int,
        ttl_seconds: float,
    ) -> None:
        self._call = routes.connect_url(sandbox_id, port, ttl_seconds, "tcp")
        self._http = SyncHTTP(settings, policy, "gateway", time.sleep)

    def __call__(self) -> str:
        return routes.minted_url(self._http.send(self._call))

    def close(self) -> None:
        self._http.close()


class _Pipe:
    """One accepted local connection and its tunnel."""

    def __init__(self, local: socket.socket) -> None:
        self.local = local
        self.tunnel: TunnelSocket | None = None
        self.threads: list[threading.Thread] = []

    def wake(self) -> None:
        with contextlib.suppress(OSError):
            self.local.shutdown(socket.SHUT_RDWR)
        if self.tunnel is not None:
            self.tunnel.shutdown()


class PortForward:
    """A loopback port forwarded to guest port ``remote_port``; a context
    manager (blocking ``with`` or ``async with``).

    ``mint()`` returns a fresh connect URL each call (one per accepted
    connection). ``host`` / ``port`` (also ``local_port``) is where to point
    a client, ``address`` is ``"host:port"`` and ``url`` is
    ``"http://host:port"`` for the common HTTP case. ``errors`` counts the
    connections that could not be tunnelled (``last_error`` says why).
    """

    def __init__(
        self,
        mint: Callable[[], str],
        remote_port: int,
        *,
        local_host: str = "127.0.0.1",
        local_port: int = 0,
        backlog: int = 16,
        first_url: str | None = None,
    ) -> None:
        self._mint = mint
        self.remote_port = remote_port
        self._first_url = first_url
        self._first_at = time.monotonic()
        self._server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._server.bind((local_host, local_port))
            self._server.listen(backlog)
        except BaseException:
            self._server.close()
            raise
        self.host, self.port = self._server.getsockname()[:2]
        self._lock = threading.Lock()
        self._pipes: set[_Pipe] = set()
        self._closed = False
        self._accepter = threading.Thread(
            target=self._accept_loop, name=f"port-forward-{self.port}", daemon=True
        )
        self.errors = 0
        self.last_error: BaseException | None = None

    @property
    def local_port(self) -> int:
        return int(self.port)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def closed(self) -> bool:
        return self._closed

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"PortForward({self.address} -> guest port {self.remote_port}, {state})"

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> PortForward:
        """Start accepting (idempotent)."""
        if not self._accepter.is_alive() and not self._closed:
            self._accepter.start()
        return self

    def close(self) -> None:
        """Stop listening, end every tunnel, wait for the threads. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            pipes = list(self._pipes)
        with contextlib.suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        self._server.close()
        for pipe in pipes:
            pipe.wake()
        if self._accepter.is_alive() and self._accepter is not threading.current_thread():
            self._accepter.join(_JOIN_S)
        for pipe in pipes:
            for thread in pipe.threads:
                if thread is not threading.current_thread():
                    thread.join(_JOIN_S)
        closer = getattr(self._mint, "close", None)
        if callable(closer):
            closer()

    def __enter__(self) -> PortForward:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> PortForward:
        return self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()

    # -- the work ----------------------------------------------------------------

    def _accept_loop(self) -> None:
        while True:
            try:
                local, _ = self._server.accept()
            except OSError:
                return  # closed
            pipe = _Pipe(local)
            with self._lock:
                if self._closed:
                    local.close()
                    return
                self._pipes.add(pipe)
                thread = threading.Thread(
                    target=self._serve,
                    args=(pipe,),
                    name=f"port-forward-{self.port}-up",
                    daemon=True,
                )
                pipe.threads.append(thread)
            thread.start()

    def _next_url(self) -> str:
        with self._lock:
            url, self._first_url = self._first_url, None
        if url is not None and time.monotonic() - self._first_at < _FIRST_URL_FRESH_S:
            return url
        return self._mint()

    def _serve(self, pipe: _Pipe) -> None:
        """Local -> guest in this thread, guest -> local in a second one."""
        try:
            tunnel = TunnelSocket(self._next_url())
            with self._lock:
                pipe.tunnel = tunnel
                if self._closed:
                    return
                down = threading.Thread(
                    target=self._downstream,
                    args=(pipe, tunnel),
                    name=f"port-forward-{self.port}-down",
                    daemon=True,
                )
                pipe.threads.append(down)
            down.start()
            while True:
                data = pipe.local.recv(_CHUNK)
                if not data:
                    break
                tunnel.send(data)
        except Exception as exc:
            # a mint or handshake refused is worth a word; a connection
            # dropping mid-stream (either side leaving) is how streams end
            if not self._closed and (pipe.tunnel is None or not isinstance(exc, OSError)):
                self.errors += 1
                self.last_error = exc
                log.warning("port forward to guest port %s: %s", self.remote_port, exc)
        finally:
            if pipe.tunnel is not None:
                pipe.tunnel.close()
            with contextlib.suppress(OSError):
                pipe.local.close()
            with self._lock:
                self._pipes.discard(pipe)

    def _downstream(self, pipe: _Pipe, tunnel: TunnelSocket) -> None:
        try:
            while (data := tunnel.recv()) is not None:
                pipe.local.sendall(data)
        except (OSError, ConnectionError, ValueError):
            pass
        finally:
            # the guest is done: the local client sees the end, and the
            # upstream thread (blocked reading the client) wakes up
            with contextlib.suppress(OSError):
                pipe.local.shutdown(socket.SHUT_RDWR)


def open_port_forward(
    mint: Callable[[], str],
    remote_port: int,
    *,
    local_host: str = "127.0.0.1",
    local_port: int = 0,
    first_url: str | None = None,
) -> PortForward:
    """A started :class:`PortForward` to ``remote_port``; ``mint()`` returns
    a fresh ``tcp`` connect URL each call (``first_url``: one already minted,
    used for the first connection). Sandboxes, sessions and gateway clients
    build one for you (``port_forward``)."""
    return PortForward(
        mint, remote_port, local_host=local_host, local_port=local_port, first_url=first_url
    ).start()


def forward_with(
    settings: HttpSettings,
    policy: RetryPolicy,
    sandbox_id: str,
    port: int,
    *,
    first_url: str,
    local_host: str,
    local_port: int,
    ttl_seconds: float,
) -> PortForward:
    """A started forward whose URLs a :class:`ConnectMinter` mints (what the
    gateway clients' ``port_forward`` returns); the minter closes with it."""
    minter = ConnectMinter(settings, policy, sandbox_id, port, ttl_seconds)
    try:
        return open_port_forward(
            minter, port, local_host=local_host, local_port=local_port, first_url=first_url
        )
    except BaseException:
        minter.close()
        raise
