"""Readiness of an app clone: its server answers HTTP on loopback.

A tiny raw-asyncio HTTP GET (the engine must not depend on the client
transport layer): ready means a 2xx status line, like the gateway's
``ready.http``. Without a path, an accepted TCP connection is enough. The
request is HTTP/1.1 with ``Connection: close``: some servers refuse 1.0
outright (Chromium's DevTools endpoint answers it with nothing).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time


def free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def probe_once(port: int, path: str | None) -> bool:
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 1.0)
    except (OSError, asyncio.TimeoutError):
        return False
    try:
        if path is None:
            return True
        writer.write(
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode()
        )
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), 2.0)
        parts = line.split()
        return len(parts) >= 2 and parts[1][:1] == b"2"
    except (OSError, asyncio.TimeoutError):
        return False
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


async def wait_ready(port: int, path: str | None, timeout_s: float, alive: object) -> bool:
    """Poll until ready, the deadline passes, or ``alive()`` turns false."""
    deadline = time.monotonic() + timeout_s
    delay = 0.01
    while time.monotonic() < deadline:
        if callable(alive) and not alive():
            return False
        if await probe_once(port, path):
            return True
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.2)
    return False
