"""The tunnel's pump: a client's WebSocket on one side, a TCP connection to
a sandbox's guest port on the other, raw bytes carried both ways.

Every data frame the client sends (binary, text or a continuation: the
payload is what counts) is written to the guest port as is; every chunk the
guest port answers goes back as one binary frame. So any protocol rides it:
HTTP, a WebSocket of the guest's own, a database's wire. Pings are
answered. The tunnel ends when either side does: the client's close (or
its connection dropping) closes the guest connection, and the guest closing
its side sends the client a close frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from typing import Any

from .._websocket import (
    BINARY,
    CLOSE,
    CONTINUATION,
    PING,
    TEXT,
    FrameReader,
    FramingError,
    close_payload,
    encode_frame,
)
from .routing import ByteStream

log = logging.getLogger("collimate_rl.local_backend.tunnel")

_CHUNK = 64 * 1024
_NORMAL, _PROTOCOL_ERROR = 1000, 1002


async def _client_to_guest(client: ByteStream, guest: asyncio.StreamWriter) -> None:
    frames = FrameReader(expect_masked=True)
    while True:
        data = await client.read()
        if not data:
            return
        frames.feed(data)
        while (frame := frames.next_frame()) is not None:
            if frame.opcode in (BINARY, TEXT, CONTINUATION):
                if frame.payload:
                    guest.write(frame.payload)
                    await guest.drain()
            elif frame.opcode == PING:
                client.write(encode_frame(0xA, frame.payload, mask=False))
                await client.drain()
            elif frame.opcode == CLOSE:
                client.write(encode_frame(CLOSE, close_payload(_NORMAL), mask=False))
                await client.drain()
                return
            # a pong, or an opcode no one uses here: nothing to do


async def _guest_to_client(guest: asyncio.StreamReader, client: ByteStream) -> None:
    while True:
        data = await guest.read(_CHUNK)
        if not data:
            client.write(encode_frame(CLOSE, close_payload(_NORMAL, "guest closed"), mask=False))
            await client.drain()
            return
        client.write(encode_frame(BINARY, data, mask=False))
        await client.drain()


async def relay(
    guest_reader: asyncio.StreamReader, guest_writer: asyncio.StreamWriter, client: ByteStream
) -> None:
    """Carry bytes between ``client`` and the guest connection until one of
    them ends; the guest connection is closed on every path."""
    await run_both_ways(
        _client_to_guest(client, guest_writer),
        _guest_to_client(guest_reader, client),
        guest_writer,
        client,
    )


async def run_both_ways(
    up: Coroutine[Any, Any, None],
    down: Coroutine[Any, Any, None],
    guest_writer: asyncio.StreamWriter,
    client: ByteStream,
) -> None:
    """Run a relay's two directions until either ends, the other then
    cancelled; a peer that broke the framing is told so (close 1002); the
    guest's connection is closed on every path. (Shared by the byte tunnel
    and the ``cdp`` relay: only what each direction does differs.)"""
    tasks = (asyncio.ensure_future(up), asyncio.ensure_future(down))
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            exc = task.exception()
            if isinstance(exc, FramingError):
                with contextlib.suppress(Exception):
                    client.write(
                        encode_frame(CLOSE, close_payload(_PROTOCOL_ERROR, str(exc)), mask=False)
                    )
                    await client.drain()
            elif exc is not None and not isinstance(exc, (ConnectionError, OSError)):
                log.warning("tunnel ended by %s: %s", type(exc).__name__, exc)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        guest_writer.close()
        with contextlib.suppress(Exception):
            await guest_writer.wait_closed()
