"""One async client per (event loop, target), reused, and closed for sure.

slime awaits every reward call on one long-lived event loop (a daemon
thread running ``run_forever``), hundreds of calls per step. Each call
must find the same client: core coalesces concurrent grades per client
and target into packs, and a client keeps its keep-alive connections. A
client's connections belong to the loop that opened them, so another loop
(``asyncio.run`` in a test, a second rollout thread) gets a client of its
own.

Clients are closed, on their own loop, whichever way the loop ends:

* ``asyncio.run`` and ``asyncio.Runner`` finalise the loop's async
  generators before they close it (``loop.shutdown_asyncgens()``): each
  client is held open by a suspended async generator whose ``finally``
  closes it there;
* a loop still alive when the interpreter exits (slime's, which runs
  forever in a daemon thread) is asked to close its clients from an
  ``atexit`` hook: on the loop itself when it runs in another thread, or
  by running it briefly when it is idle;
* :func:`aclose_clients` closes the current loop's clients on demand
  (before a hand-made ``loop.close()`` that skips ``shutdown_asyncgens``).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import threading
import weakref
from collections.abc import AsyncGenerator
from typing import Any, Final

from collimate_rl import connect_async
from collimate_rl.transport import AsyncSessionClient

from .config import Target

__all__ = ["aclose_clients", "client_for", "open_clients", "slots_for"]

#: How long the exit hook waits for a running loop to close its clients.
_EXIT_WAIT_S: Final = 5.0


class _Held:
    """A client, the async generator that keeps it open on its loop, and
    the loop's limits on grades in flight to its target."""

    __slots__ = ("client", "keeper", "slots")

    def __init__(self, client: AsyncSessionClient) -> None:
        self.client = client
        self.keeper: AsyncGenerator[None, None] | None = None
        self.slots: dict[int, asyncio.Semaphore] = {}


_lock = threading.Lock()
_by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Target, _Held]] = (
    weakref.WeakKeyDictionary()
)


async def _keep(
    loop: asyncio.AbstractEventLoop, target: Target, held: _Held
) -> AsyncGenerator[None, None]:
    """Suspended at ``yield`` for the client's life; the loop's shutdown of
    async generators (or :func:`aclose_clients`) resumes it to close it."""
    try:
        yield
    finally:
        with _lock:
            clients = _by_loop.get(loop)
            if clients is not None and clients.get(target) is held:
                del clients[target]
        with contextlib.suppress(Exception):
            await held.client.aclose()


def _forget_closed_loops() -> None:
    """Drop what loops closed by hand (without ``shutdown_asyncgens``) left:
    their clients can never be used again (the caller holds ``_lock``)."""
    for loop in [loop for loop in _by_loop if loop.is_closed()]:
        del _by_loop[loop]


async def client_for(target: Target) -> AsyncSessionClient:
    """The client of ``target`` for the running loop (made on first use)."""
    loop = asyncio.get_running_loop()
    with _lock:
        _forget_closed_loops()
        clients = _by_loop.setdefault(loop, {})
        held = clients.get(target)
        if held is not None:
            return held.client
        held = _Held(connect_async(**target.connect_kwargs()))
        clients[target] = held
    keeper = _keep(loop, target, held)
    held.keeper = keeper
    # The first step registers the generator with this loop (its firstiter
    # hook) and parks it at ``yield``: nothing is awaited on the network.
    await keeper.__anext__()
    return held.client


def slots_for(target: Target, limit: int | None) -> contextlib.AbstractAsyncContextManager[Any]:
    """What a grade to ``target`` holds while in flight: one of ``limit``
    places shared by the running loop's grades to that target (``None``:
    no limit; core still keeps the execs within what the server admits).
    Call after :func:`client_for` (the places live with the client)."""
    if limit is None:
        return contextlib.nullcontext()
    held = _by_loop[asyncio.get_running_loop()][target]
    slots = held.slots.get(limit)
    if slots is None:
        slots = held.slots[limit] = asyncio.Semaphore(limit)
    return slots


def open_clients(loop: asyncio.AbstractEventLoop | None = None) -> dict[Target, AsyncSessionClient]:
    """The clients open on ``loop`` (default: the running one), by target."""
    if loop is None:
        loop = asyncio.get_running_loop()
    with _lock:
        return {t: h.client for t, h in (_by_loop.get(loop) or {}).items()}


async def _close_all(helds: list[_Held]) -> None:
    for held in helds:
        if held.keeper is not None:
            with contextlib.suppress(Exception):
                await held.keeper.aclose()


def _take(loop: asyncio.AbstractEventLoop) -> list[_Held]:
    with _lock:
        return list((_by_loop.get(loop) or {}).values())


async def aclose_clients() -> None:
    """Close the running loop's clients now (the next call opens new ones)."""
    await _close_all(_take(asyncio.get_running_loop()))


def _close_at_exit() -> None:
    """Close the clients of every loop still alive at interpreter exit."""
    with _lock:
        loops = list(_by_loop.items())
    for loop, clients in loops:
        helds = list(clients.values())
        if not helds or loop.is_closed():
            continue
        try:
            if loop.is_running():
                # Another thread runs it (slime's rollout loop): close there.
                future = asyncio.run_coroutine_threadsafe(_close_all(helds), loop)
                with contextlib.suppress(concurrent.futures.TimeoutError):
                    future.result(_EXIT_WAIT_S)
            else:
                loop.run_until_complete(_close_all(helds))
        except Exception:  # exiting: never mask the real exit status
            continue


atexit.register(_close_at_exit)
