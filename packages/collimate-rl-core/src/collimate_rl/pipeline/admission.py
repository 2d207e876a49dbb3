"""Backpressure: the execs in flight to a server, kept within what it admits.

A server admits so many execs at once and answers 503 ``at_capacity`` past
that (the local backend: ``max_inflight``, 64 by default). That answer is
proof the exec did not run, so it is safe to send again; but a client
that sends 256 grades at once and only retries a few times fails the
group. Here every exec of the grading pipeline goes through its server's
:class:`Gate`: at most ``limit`` in flight from this process, the rest
wait their turn in arrival order (threads and event loops alike, in one
queue). The limit starts at what the server says in ``/v1/health`` and,
where it says nothing or other processes share it, is learnt from
``at_capacity`` answers: each one lowers the limit below what was in
flight and the exec is sent again once a slot frees (for
:data:`CAPACITY_PATIENCE_S` at most, if the server stays full of others'
work); execs admitted in a row raise it again, slowly, up to what the
server said.
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections import deque
from typing import Any, Final

from ..errors import CollimateError
from .targets import TargetFacts, endpoint_of

__all__ = [
    "CAPACITY_PATIENCE_S",
    "Gate",
    "capacity_pause",
    "gate_for",
    "gates",
    "refused_for_capacity",
]

#: How long an exec refused for capacity keeps being sent again (the server
#: full of other processes' work); past that, the refusal is raised.
CAPACITY_PATIENCE_S: Final = 300.0
_BACKOFF_S: Final = 0.02
#: Execs admitted in a row, in limits, before the limit grows by one. A
#: server may hold a slot a little past its answer (the local backend wipes
#: the clone first), so a limit at its word meets a refusal now and then:
#: growing back slowly keeps those rare.
_STREAK: Final = 4
_BACKOFF_MAX_S: Final = 1.0


class _ThreadWaiter:
    __slots__ = ("event",)

    def __init__(self) -> None:
        self.event = threading.Event()

    def grant(self) -> bool:
        self.event.set()
        return True


def _settle(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class _LoopWaiter:
    __slots__ = ("fut", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.fut: asyncio.Future[None] = loop.create_future()

    def grant(self) -> bool:
        try:
            self.loop.call_soon_threadsafe(_settle, self.fut)
        except RuntimeError:  # its loop is closed: nobody will take the slot
            return False
        return True


_Waiter = _ThreadWaiter | _LoopWaiter


class Gate:
    """Execs in flight to one server: at most ``limit`` (None: no limit
    known), the others queued in arrival order. A released slot is handed
    straight to the first waiter, so nobody overtakes the queue."""

    def __init__(self, ceiling: int | None = None) -> None:
        self._lock = threading.Lock()
        #: what the server said it admits (None: it did not say)
        self.ceiling = ceiling
        #: what this process sends at once (at most ``ceiling``)
        self.limit = ceiling
        self.inflight = 0
        self.peak = 0
        self._streak = 0
        self._waiters: deque[_Waiter] = deque()

    def _has_room(self) -> bool:
        return self.limit is None or self.inflight < self.limit

    def _take(self) -> None:
        self.inflight += 1
        self.peak = max(self.peak, self.inflight)

    def _grants(self) -> list[_Waiter]:
        """Hand free slots to waiters (under the lock); grant outside it."""
        out: list[_Waiter] = []
        while self._waiters and self._has_room():
            out.append(self._waiters.popleft())
            self._take()
        return out

    def _grant(self, waiters: list[_Waiter]) -> None:
        for waiter in waiters:
            if not waiter.grant():
                self.release()

    def acquire(self) -> None:
        """Take a slot, waiting for one (blocking)."""
        with self._lock:
            if not self._waiters and self._has_room():
                self._take()
                return
            waiter = _ThreadWaiter()
            self._waiters.append(waiter)
        waiter.event.wait()

    async def acquire_async(self) -> None:
        """Take a slot, waiting for one on the running loop."""
        with self._lock:
            if not self._waiters and self._has_room():
                self._take()
                return
            waiter = _LoopWaiter(asyncio.get_running_loop())
            self._waiters.append(waiter)
        try:
            await waiter.fut
        except BaseException:
            with self._lock:
                handed = waiter not in self._waiters
                if not handed:
                    self._waiters.remove(waiter)
            if handed:  # the slot came with the cancellation: give it on
                self.release()
            raise

    def release(self) -> None:
        with self._lock:
            self.inflight -= 1
            waiters = self._grants()
        self._grant(waiters)

    def admitted(self) -> None:
        """An exec got through: after :data:`_STREAK` times ``limit`` in a
        row, allow one more (up to what the server said)."""
        with self._lock:
            if self.limit is None or (self.ceiling is not None and self.limit >= self.ceiling):
                return
            self._streak += 1
            if self._streak < _STREAK * self.limit:
                return
            self._streak = 0
            self.limit += 1
            waiters = self._grants()
        self._grant(waiters)

    def refused(self) -> None:
        """The server answered ``at_capacity`` to one of the execs in
        flight: it holds no more than the others now."""
        with self._lock:
            self._streak = 0
            others = max(1, self.inflight - 1)
            self.limit = others if self.limit is None else max(1, min(self.limit, others))

    def told(self, ceiling: int | None) -> None:
        """What the server says it admits (from a fresh ``health``): a
        limit at the old ceiling, or above the new one, follows it."""
        with self._lock:
            if ceiling == self.ceiling:
                return
            old, self.ceiling = self.ceiling, ceiling
            if ceiling is not None and (
                self.limit is None or self.limit > ceiling or self.limit == old
            ):
                self.limit = ceiling
            waiters = self._grants()
        self._grant(waiters)


class _Gates:
    """One gate per server endpoint, shared by every client of it."""

    def __init__(self) -> None:
        self._gates: dict[str, Gate] = {}
        self._lock = threading.Lock()

    def get(self, endpoint: str, facts: TargetFacts) -> Gate:
        with self._lock:
            gate = self._gates.get(endpoint)
            if gate is None:
                gate = self._gates[endpoint] = Gate(facts.max_inflight)
                return gate
        if facts.max_inflight is not None:  # (not saying is not news)
            gate.told(facts.max_inflight)
        return gate

    def find(self, endpoint: str) -> Gate | None:
        """The gate of ``endpoint``, if any exec went there."""
        with self._lock:
            return self._gates.get(endpoint)

    def clear(self) -> None:
        with self._lock:
            self._gates.clear()


#: Every server's gate in this process (``gates.clear()`` forgets them).
gates = _Gates()


def gate_for(client: Any, facts: TargetFacts) -> Gate:
    """The gate of ``client``'s server."""
    return gates.get(endpoint_of(client), facts)


def refused_for_capacity(exc: CollimateError) -> bool:
    """The server answered ``at_capacity``: the exec did not run and may be
    sent again."""
    return exc.error_code == "at_capacity"


def capacity_pause(attempt: int) -> float:
    """Seconds to wait before sending a refused exec again (full jitter,
    doubling from 20 ms up to 1 s)."""
    return random.uniform(0.0, min(_BACKOFF_MAX_S, _BACKOFF_S * 2**attempt))
