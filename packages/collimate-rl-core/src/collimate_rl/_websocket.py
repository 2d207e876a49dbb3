"""The WebSocket framing (RFC 6455) the connect tunnel needs, with no I/O.

Both ends of the tunnel use it: the local backend's tunnel endpoint (server
side, over asyncio streams) and the client's port forward (client side, over
blocking sockets). Only what a byte tunnel needs is here: the opening
handshake's accept key, frames encoded (masked when a client sends them), and
an incremental reader that turns received bytes into whole frames. Written
here rather than taken from a library so that importing the client, or
running the backend, adds no dependency.
"""

from __future__ import annotations

import base64
import hashlib
import os
import struct
from dataclasses import dataclass
from typing import Final

__all__ = [
    "CLOSE",
    "PING",
    "PONG",
    "BINARY",
    "TEXT",
    "CONTINUATION",
    "Frame",
    "FrameReader",
    "FramingError",
    "accept_key",
    "close_payload",
    "encode_frame",
    "new_key",
]

CONTINUATION: Final = 0x0
TEXT: Final = 0x1
BINARY: Final = 0x2
CLOSE: Final = 0x8
PING: Final = 0x9
PONG: Final = 0xA

#: the GUID of RFC 6455 §1.3, appended to the client's key
_HANDSHAKE_GUID: Final = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

#: a frame longer than this is refused: the tunnel sends chunks of at most
#: 64 KiB, so a peer announcing more is broken or hostile
MAX_FRAME: Final = 16 * 1024 * 1024


class FramingError(ValueError):
    """The peer broke the framing rules (the connection is to be closed)."""


def new_key() -> str:
    """A fresh ``Sec-WebSocket-Key`` (16 random bytes, base64)."""
    return base64.b64encode(os.urandom(16)).decode("ascii")


def accept_key(key: str) -> str:
    """The ``Sec-WebSocket-Accept`` answering ``key`` (RFC 6455 §4.2.2)."""
    digest = hashlib.sha1(key.strip().encode("latin-1") + _HANDSHAKE_GUID).digest()
    return base64.b64encode(digest).decode("ascii")


def _apply_mask(data: bytes, mask: bytes) -> bytes:
    """XOR ``data`` with the 4-byte ``mask`` repeated (its own inverse).
    Done as one big-integer XOR: per-byte Python loops cost a tunnel dearly."""
    if not data:
        return data
    repeated = (mask * (len(data) // 4 + 1))[: len(data)]
    value = int.from_bytes(data, "big") ^ int.from_bytes(repeated, "big")
    return value.to_bytes(len(data), "big")


def encode_frame(opcode: int, payload: bytes = b"", *, mask: bool, fin: bool = True) -> bytes:
    """One frame, final unless ``fin`` is false (a relay passing a
    fragmented message on keeps its fragments). A client must mask what it
    sends (``mask=True``), a server must not (RFC 6455 §5.1)."""
    head = bytearray([(0x80 if fin else 0) | opcode])
    mask_bit = 0x80 if mask else 0
    n = len(payload)
    if n < 126:
        head.append(mask_bit | n)
    elif n < 1 << 16:
        head.append(mask_bit | 126)
        head += struct.pack(">H", n)
    else:
        head.append(mask_bit | 127)
        head += struct.pack(">Q", n)
    if mask:
        key = os.urandom(4)
        return bytes(head) + key + _apply_mask(payload, key)
    return bytes(head) + payload


def close_payload(code: int, reason: str = "") -> bytes:
    """The body of a close frame: a status code and a short reason."""
    return struct.pack(">H", code) + reason.encode("utf-8")[:120]


@dataclass(frozen=True)
class Frame:
    opcode: int
    payload: bytes
    fin: bool


class FrameReader:
    """Feed it the bytes received, take whole frames out.

    ``expect_masked`` is what this end requires of its peer: a server reads
    masked client frames (an unmasked one is a protocol error), a client
    reads unmasked server frames. ``max_frame`` bounds one frame's payload
    (a byte tunnel's chunks are small; a DevTools message, a screenshot in
    base64, may be tens of megabytes).
    """

    def __init__(self, *, expect_masked: bool, max_frame: int = MAX_FRAME) -> None:
        self.expect_masked = expect_masked
        self.max_frame = max_frame
        self._buf = bytearray()

    def feed(self, data: bytes) -> None:
        self._buf += data

    def next_frame(self) -> Frame | None:
        """The next whole frame, or ``None`` until more bytes arrive."""
        buf = self._buf
        if len(buf) < 2:
            return None
        b0, b1 = buf[0], buf[1]
        if b0 & 0x70:
            raise FramingError("reserved bits set (no extension was negotiated)")
        masked = bool(b1 & 0x80)
        if masked != self.expect_masked:
            raise FramingError("masked frame from a server" if masked else "unmasked client frame")
        length = b1 & 0x7F
        at = 2
        if length == 126:
            if len(buf) < 4:
                return None
            length = struct.unpack_from(">H", buf, 2)[0]
            at = 4
        elif length == 127:
            if len(buf) < 10:
                return None
            length = struct.unpack_from(">Q", buf, 2)[0]
            at = 10
        if length > self.max_frame:
            raise FramingError(f"frame of {length} bytes is over {self.max_frame}")
        opcode = b0 & 0x0F
        if opcode >= 0x8 and (length > 125 or not b0 & 0x80):
            raise FramingError("control frames must be final and at most 125 bytes")
        key = b""
        if masked:
            if len(buf) < at + 4:
                return None
            key = bytes(buf[at : at + 4])
            at += 4
        if len(buf) < at + length:
            return None
        payload = bytes(buf[at : at + length])
        del buf[: at + length]
        if masked:
            payload = _apply_mask(payload, key)
        return Frame(opcode, payload, bool(b0 & 0x80))
