"""Reach an app server that lives in a clone's own net namespace.

An app template that is not networked runs its server in a net namespace
holding only a loopback of its own: the server cannot reach the host (nor
anything else), and the host cannot reach it either. A :class:`NetnsRelay`
bridges the one way we want: it listens on the host's loopback and, for each
connection, opens a socket *inside* the clone's namespace (a socket belongs
to the namespace it was made in, whatever thread uses it later) and copies
bytes both ways. The relay is the engine's, not the clone's: nothing in the
clone gains a route out.

The socket is made on a short-lived thread that enters the namespace with
``setns`` and ends there (a namespace is per thread; a thread that never
runs anything else cannot leak it to other work). Needs root, like the rest
of namespaces isolation.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
from collections.abc import Callable

from ...guest.zygote.kernel import CLONE_NEWNET, setns

__all__ = ["NetnsRelay", "socket_in_netns"]

_CHUNK = 256 * 1024


def socket_in_netns(netns_fd: int) -> socket.socket:
    """A TCP socket made in the net namespace ``netns_fd`` refers to."""
    made: list[socket.socket] = []
    failed: list[BaseException] = []

    def enter_and_make() -> None:
        try:
            setns(netns_fd, CLONE_NEWNET, "setns into the clone's net namespace")
            made.append(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
        except BaseException as exc:  # handed to the caller's thread
            failed.append(exc)

    worker = threading.Thread(target=enter_and_make, name="netns-socket", daemon=True)
    worker.start()
    worker.join()
    if failed:
        raise failed[0]
    return made[0]


class NetnsRelay:
    """``127.0.0.1:<host_port>`` on the host relayed to ``127.0.0.1:<inner_port>``
    in one clone's net namespace, until :meth:`close`. ``counted(+1 / -1)``
    is told of each connection relayed as it starts and ends."""

    def __init__(
        self,
        netns_fd: int,
        host_port: int,
        inner_port: int,
        counted: Callable[[int], None] = lambda _delta: None,
    ) -> None:
        # our own handle on the namespace: the engine may close (or reuse) its
        # own once the clone is gone, and connections in flight must not care
        self._netns_fd = os.dup(netns_fd)
        self.host_port = host_port
        self.inner_port = inner_port
        self._counted = counted
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        try:
            self._server = await asyncio.start_server(
                self._serve, "127.0.0.1", self.host_port, reuse_address=True
            )
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Stop listening and cut every relayed connection (the clone is gone)."""
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()
        if self._netns_fd >= 0:
            os.close(self._netns_fd)
            self._netns_fd = -1

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        inner_writer: asyncio.StreamWriter | None = None
        try:
            inner_reader, inner_writer = await self._connect_inside()
            if self._server is None:
                return  # closed meanwhile: the namespace may be another clone's by now
            self._writers.add(inner_writer)
            self._counted(+1)
            try:
                await asyncio.gather(
                    _copy(reader, inner_writer), _copy(inner_reader, writer), return_exceptions=True
                )
            finally:
                self._counted(-1)
        except OSError:
            pass  # nothing listens inside (yet): the host side sees a closed connection
        finally:
            for w in (writer, inner_writer):
                if w is not None:
                    self._writers.discard(w)
                    w.close()

    async def _connect_inside(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self._netns_fd < 0:
            raise OSError("the relay is closed")
        sock = await asyncio.to_thread(socket_in_netns, self._netns_fd)
        try:
            sock.setblocking(False)
            await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", self.inner_port))
            return await asyncio.open_connection(sock=sock)
        except BaseException:
            sock.close()
            raise


async def _copy(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    """Bytes from ``src`` to ``dst`` until ``src`` ends; then half-close ``dst``."""
    try:
        while chunk := await src.read(_CHUNK):
            dst.write(chunk)
            await dst.drain()
        if dst.can_write_eof():
            dst.write_eof()
    except (OSError, ConnectionError):
        with contextlib.suppress(Exception):
            dst.transport.abort()
