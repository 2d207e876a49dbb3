"""Draining an exec's merged output pipe under a byte cap.

The pipe is always drained to EOF (a child blocked on a full pipe would never
exit, and could not be told apart from a real hang), but only the first
``cap`` bytes are kept.
"""

from __future__ import annotations

import asyncio
import os


async def read_capped(fd: int, cap: int) -> tuple[bytes, bool]:
    """Read ``fd`` to EOF; return (first ``cap`` bytes, truncated?). The caller owns ``fd``."""
    loop = asyncio.get_running_loop()
    os.set_blocking(fd, False)
    chunks: list[bytes] = []
    kept = 0
    truncated = False
    done: asyncio.Future[None] = loop.create_future()

    def on_readable() -> None:
        nonlocal kept, truncated
        while True:
            try:
                data = os.read(fd, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                loop.remove_reader(fd)
                if not done.done():
                    done.set_result(None)
                return
            room = cap - kept
            if room > 0:
                chunks.append(data[:room])
                kept += min(room, len(data))
            if len(data) > room:
                truncated = True

    loop.add_reader(fd, on_readable)
    try:
        await done
    finally:
        loop.remove_reader(fd)
    return b"".join(chunks), truncated
