"""The tunnel's ``cdp`` mode: a client's WebSocket relayed, message for
message, to the browser's own DevTools WebSocket in the sandbox.

A raw byte tunnel cannot serve a CDP client that is handed a ``ws://`` URL
(``playwright.connect_over_cdp(url)``): such a client speaks DevTools JSON
as WebSocket frames to the URL itself and never makes the HTTP request that
finds the browser's endpoint. So in ``cdp`` mode the server does it: it asks
the guest's DevTools port for ``/json/version``, opens the browser-level
WebSocket it names (``webSocketDebuggerUrl``), and then passes each frame on
between the two WebSockets, unmasked towards the client and masked towards
the browser as RFC 6455 asks, fragments and control frames included.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from .._websocket import CLOSE, FrameReader, close_payload, encode_frame, new_key
from .._websocket import accept_key as expected_accept
from .routing import ByteStream
from .tunnel_relay import run_both_ways

#: DevTools messages can be large (a screenshot travels as base64 JSON)
CDP_MAX_FRAME = 256 * 1024 * 1024
#: how long the browser may take to answer its discovery and handshake
HANDSHAKE_TIMEOUT_S = 15.0
_CHUNK = 64 * 1024
_NORMAL = 1000


class CdpUnavailable(Exception):
    """The guest port did not behave as a DevTools endpoint."""


async def _read_head(reader: asyncio.StreamReader) -> tuple[str, dict[str, str]]:
    """The status line and headers (lowercased names) of an HTTP answer;
    the rest is left in ``reader``."""
    lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
    return lines[0], headers


async def _browser_path(host: str, port: int) -> str:
    """The path of the browser-level DevTools WebSocket, from ``/json/version``."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(
            f"GET /json/version HTTP/1.1\r\nHost: {host}:{port}\r\n"
            "Connection: close\r\n\r\n".encode("ascii")
        )
        await writer.drain()
        status, headers = await _read_head(reader)
        if " 200 " not in status + " ":
            raise CdpUnavailable(f"/json/version answered {status!r}")
        # (DevTools keeps the connection open: read what Content-Length says)
        length = headers.get("content-length", "")
        if not length.isdigit() or int(length) > 1 << 20:
            raise CdpUnavailable(f"/json/version sent no usable Content-Length ({length!r})")
        body = await reader.readexactly(int(length))
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
    try:
        url = json.loads(body)["webSocketDebuggerUrl"]
    except (ValueError, KeyError, TypeError):
        raise CdpUnavailable("/json/version names no webSocketDebuggerUrl") from None
    path = urlsplit(str(url)).path
    if not path.startswith("/devtools/"):
        raise CdpUnavailable(f"unexpected DevTools endpoint {url!r}")
    return path


async def open_browser_socket(
    host: str, port: int
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A WebSocket to the browser's DevTools endpoint (frames that came with
    the handshake's answer stay buffered in the reader)."""
    try:
        return await asyncio.wait_for(_open(host, port), HANDSHAKE_TIMEOUT_S)
    except asyncio.TimeoutError:
        raise CdpUnavailable(f"no DevTools answer within {HANDSHAKE_TIMEOUT_S:.0f} s") from None
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
        raise CdpUnavailable(f"the DevTools port failed: {exc}") from None


async def _open(host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    path = await _browser_path(host, port)
    reader, writer = await asyncio.open_connection(host, port, limit=1 << 20)
    key = new_key()
    writer.write(
        (
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n"
        ).encode("ascii")
    )
    await writer.drain()
    status, headers = await _read_head(reader)
    if " 101 " not in status + " " or headers.get("sec-websocket-accept") != expected_accept(key):
        writer.close()
        raise CdpUnavailable(f"the browser refused the DevTools WebSocket: {status!r}")
    return reader, writer


async def _pass_frames(
    read: Callable[[], Awaitable[bytes]], out: ByteStream | asyncio.StreamWriter, *, masked: bool
) -> bool:
    """Pass each frame ``read`` brings on to ``out`` as it came, masked
    (the client's, towards the browser) or not (the browser's, towards the
    client), until the reading side ends (False) or a close frame has gone
    through (True)."""
    frames = FrameReader(expect_masked=masked, max_frame=CDP_MAX_FRAME)
    while data := await read():
        frames.feed(data)
        while (frame := frames.next_frame()) is not None:
            out.write(encode_frame(frame.opcode, frame.payload, mask=masked, fin=frame.fin))
            if frame.opcode == CLOSE:
                await out.drain()
                return True
        await out.drain()
    return False


async def _client_to_browser(client: ByteStream, browser: asyncio.StreamWriter) -> None:
    await _pass_frames(client.read, browser, masked=True)


async def _browser_to_client(browser: asyncio.StreamReader, client: ByteStream) -> None:
    if not await _pass_frames(functools.partial(browser.read, _CHUNK), client, masked=False):
        client.write(encode_frame(CLOSE, close_payload(_NORMAL, "browser closed"), mask=False))
        await client.drain()


async def relay_messages(
    browser_reader: asyncio.StreamReader,
    browser_writer: asyncio.StreamWriter,
    client: ByteStream,
) -> None:
    """Pass frames between ``client`` and the browser until either ends; the
    browser's connection is closed on every path."""
    await run_both_ways(
        _client_to_browser(client, browser_writer),
        _browser_to_client(browser_reader, client),
        browser_writer,
        client,
    )
