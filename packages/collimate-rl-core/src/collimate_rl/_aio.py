"""Async helpers shared by the clients and the gateway flows above them.

The generated blocking twins (``tools/unasync.py``) import the same names
from :mod:`collimate_rl._blocking` instead.

:func:`uncancellable` is how a cleanup that must happen (deleting a one-shot
sandbox, tearing down a fork group, releasing an environment) survives the
cancellation of the task awaiting it. The async gateway client uses it and so
do the flows a layer above it: it lives below both (docs/architecture.md,
"Layers of core").
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any, TypeVar

__all__ = ["gather_all", "run_each", "uncancellable"]

T = TypeVar("T")

# Background deletes started while their caller was being cancelled: kept
# referenced so they are not garbage-collected before they finish.
_REAPING: set[asyncio.Future[Any]] = set()


async def gather_all(aws: Iterable[Awaitable[T]]) -> list[T]:
    """Await ``aws`` concurrently: their results, in order. (In the generated
    blocking twins this is :func:`collimate_rl._blocking.gather_all`: the
    calls made one after another.)"""
    return list(await asyncio.gather(*aws))


async def run_each(
    worker: Callable[[int], Awaitable[Any]], n: int, limit: int
) -> tuple[list[Any], dict[int, BaseException]]:
    """``worker(i)`` for ``i`` in ``range(n)``, at most ``limit`` at once (an
    anyio task group): the results by position, and the exceptions by
    position of those that raised one (an ``Exception``; anything else, a
    cancellation, goes through). (In the generated blocking twins this is
    :func:`collimate_rl._blocking.run_each`: a thread pool.)"""
    import anyio

    outcomes: list[Any] = [None] * n
    errors: dict[int, BaseException] = {}
    limiter = anyio.CapacityLimiter(limit)

    async def guarded(i: int) -> None:
        async with limiter:
            try:
                outcomes[i] = await worker(i)
            except Exception as exc:
                errors[i] = exc

    async with anyio.create_task_group() as tg:
        for i in range(n):
            tg.start_soon(guarded, i)
    return outcomes, errors


async def uncancellable(coro: Coroutine[Any, Any, Any]) -> None:
    """Await ``coro`` to the end even if the awaiting task is cancelled
    (again) meanwhile: under asyncio it runs as its own shielded task; under
    another event loop (trio) inside a shielded anyio cancel scope."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        import anyio

        with anyio.CancelScope(shield=True):
            await coro
        return
    task = asyncio.ensure_future(coro)
    _REAPING.add(task)
    task.add_done_callback(_REAPING.discard)
    await asyncio.shield(task)
