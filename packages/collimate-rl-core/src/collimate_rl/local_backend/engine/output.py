"""Collecting an exec's merged output pipe under a byte cap.

The pipe is drained continuously (a child blocked on a full pipe would never
exit and could not be told apart from a real hang), but only the first
``cap`` bytes are kept. The exec's end is known from its exit status, not from
EOF: a background process it left behind may hold the pipe open, so the
collector can also be finished early with whatever is already buffered.
"""

from __future__ import annotations

import asyncio
import contextlib
import os


class OutputCollector:
    """Owns the read end of one exec's output pipe."""

    def __init__(self, fd: int, cap: int) -> None:
        self._fd = fd
        self._cap = cap
        self._chunks: list[bytes] = []
        self._kept = 0
        self.truncated = False
        self._loop = asyncio.get_running_loop()
        self._eof = self._loop.create_future()
        os.set_blocking(fd, False)
        self._loop.add_reader(fd, self._drain)

    def _drain(self) -> None:
        while not self._eof.done():
            try:
                data = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self._loop.remove_reader(self._fd)
                self._eof.set_result(None)
                return
            room = self._cap - self._kept
            if room > 0:
                self._chunks.append(data[:room])
                self._kept += min(room, len(data))
            if len(data) > room:
                self.truncated = True

    async def finish(self, grace_s: float) -> tuple[bytes, bool]:
        """Wait up to ``grace_s`` for EOF, take what was buffered, close the pipe."""
        self._drain()  # usually EOF is already there, just not yet seen by the loop
        if not self._eof.done():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._eof), grace_s)
        self._drain()
        return self.close()

    def close(self) -> tuple[bytes, bool]:
        if self._fd >= 0:
            with contextlib.suppress(Exception):
                self._loop.remove_reader(self._fd)
            os.close(self._fd)
            self._fd = -1
        return b"".join(self._chunks), self.truncated
