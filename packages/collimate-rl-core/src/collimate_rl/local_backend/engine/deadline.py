"""Awaiting with a time limit, without a task per wait.

``asyncio.wait_for`` wraps a coroutine in a task of its own (before 3.12);
the ``asyncio.timeout`` context manager (3.11+) cancels the waiting task
itself. Every exec waits like this two or three times, so on 3.11+ the
engine uses the latter.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")

_TIMEOUT: Any = getattr(asyncio, "timeout", None)  # Python 3.11+


async def within(seconds: float, awaitable: Awaitable[T]) -> T:
    """``await awaitable``, or ``asyncio.TimeoutError`` after ``seconds``."""
    if _TIMEOUT is None:
        return await asyncio.wait_for(awaitable, seconds)
    async with _TIMEOUT(seconds):
        return await awaitable
