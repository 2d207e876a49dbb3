"""Admission control: the in-flight limit and drain mode.

Both refusals happen BEFORE any work (no clone forked, no exec started), which
is what makes 503 ``at_capacity`` and ``draining`` safe for a client to retry.
Everything here runs on the server's event loop, so plain integers suffice.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from .wire_errors import at_capacity, draining


class Admission:
    """Counts execs and creates in progress against ``max_inflight``
    (0 means unlimited) and refuses everything new once draining."""

    def __init__(self, max_inflight: int) -> None:
        if max_inflight < 0:
            raise ValueError("max_inflight must be >= 0 (0 = unlimited)")
        self.max_inflight = max_inflight
        self.inflight = 0
        self.draining = False
        self._idle = asyncio.Event()
        self._idle.set()

    def check(self) -> None:
        """Raise the refusal a new unit of work would get right now."""
        if self.draining:
            raise draining()
        if self.max_inflight and self.inflight >= self.max_inflight:
            raise at_capacity(self.max_inflight)

    def acquire(self) -> None:
        """Take one in-flight slot now, or raise the refusal (never waits)."""
        self.check()
        self.inflight += 1
        self._idle.clear()

    def release(self) -> None:
        self.inflight -= 1
        if self.inflight == 0:
            self._idle.set()

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one in-flight slot for the duration of the block."""
        self.acquire()
        try:
            yield
        finally:
            self.release()

    def start_draining(self) -> None:
        self.draining = True

    async def wait_idle(self) -> None:
        """Return once nothing admitted is still in flight."""
        await self._idle.wait()
