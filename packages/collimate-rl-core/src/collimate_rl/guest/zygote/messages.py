"""JSON messages over SOCK_SEQPACKET sockets: one message per datagram, file
descriptors as SCM_RIGHTS (the engine's end is ``engine.channel``)."""

from __future__ import annotations

import json
import os
import socket

TYPE_CHECKING = False
if TYPE_CHECKING:  # never at run time: the zygote stays free of the typing module
    from typing import Any

    Msg = dict[str, Any]

MAX_MSG = 1 << 16


def send(sock: socket.socket, msg: Msg, fds: tuple[int, ...] | list[int] = ()) -> None:
    data = json.dumps(msg).encode()
    if fds:
        socket.send_fds(sock, [data], list(fds))
    else:
        sock.send(data)


def recv(sock: socket.socket) -> tuple[Msg | None, list[int]]:
    """One message and its fds; (None, []) at EOF."""
    data, fds, _flags, _addr = socket.recv_fds(sock, MAX_MSG, 4)
    if not data:
        for fd in fds:
            os.close(fd)
        return None, []
    return json.loads(data), fds
