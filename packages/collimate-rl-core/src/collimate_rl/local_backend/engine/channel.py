"""An asyncio end of a SOCK_SEQPACKET control socket (JSON messages + fds).

The engine talks to zygotes and clones over these; one datagram is one
message, so there is no framing to get wrong, and SCM_RIGHTS carries the
pipes an exec writes its output to.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
from collections.abc import Sequence
from typing import Any

MAX_MSG = 1 << 16
Message = dict[str, Any]


class ChannelClosed(ConnectionError):
    """The other end is gone (the process died or closed its socket)."""


class Channel:
    """Non-blocking message I/O on one end of a socketpair."""

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self.sock = sock
        self._loop = asyncio.get_running_loop()
        self._inbox: asyncio.Queue[Message | None] = asyncio.Queue()
        self.closed = False
        self._loop.add_reader(sock.fileno(), self._on_readable)

    def _on_readable(self) -> None:
        while True:
            try:
                data, fds, _flags, _addr = socket.recv_fds(self.sock, MAX_MSG, 4)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data, fds = b"", []
            for fd in fds:  # the engine never expects fds back; never leak one
                os.close(fd)
            if not data:
                self._eof()
                return
            try:
                self._inbox.put_nowait(json.loads(data))
            except ValueError:
                self._eof()
                return

    def _eof(self) -> None:
        if not self.closed:
            self.closed = True
            with contextlib.suppress(Exception):
                self._loop.remove_reader(self.sock.fileno())
            self._inbox.put_nowait(None)

    def send(self, msg: Message, fds: Sequence[int] = ()) -> None:
        if self.closed:
            raise ChannelClosed("control socket closed")
        data = json.dumps(msg).encode()
        try:
            if fds:
                socket.send_fds(self.sock, [data], list(fds))
            else:
                self.sock.send(data)
        except OSError as exc:
            self._eof()
            raise ChannelClosed(str(exc)) from exc

    def inject(self, msg: Message) -> None:
        """Queue ``msg`` as if it had come from the other end (a record the
        engine got from elsewhere first, see ``fork_clone.DirectResult``)."""
        if not self.closed:
            self._inbox.put_nowait(msg)

    async def recv(self) -> Message:
        msg = await self._inbox.get()
        if msg is None:
            self._inbox.put_nowait(None)  # every later recv sees the EOF too
            raise ChannelClosed("control socket closed")
        return msg

    def close(self) -> None:
        self._eof()
        with contextlib.suppress(OSError):
            self.sock.close()
