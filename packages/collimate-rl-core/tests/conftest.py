"""Fixtures core's tests share (pytest runs in importlib mode: a test module
cannot import another, so what several of them need lives here).

A fixture that talks to a server uses the requesting module's own
``backend`` fixture: each module starts the real local backend it needs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest

from collimate_rl.local_backend import LocalCollimateBackend


@pytest.fixture
def until_running(backend: LocalCollimateBackend) -> Callable[[], Awaitable[None]]:
    """``await until_running()`` returns once the backend runs an exec (its
    health's ``running``): a test can then cancel a task mid-exec rather
    than before its request left. It fails the test after 30 s."""

    async def wait(timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while (await asyncio.to_thread(backend.health))["running"] < 1:
            assert time.monotonic() < deadline, "no exec started"
            await asyncio.sleep(0.01)

    return wait
