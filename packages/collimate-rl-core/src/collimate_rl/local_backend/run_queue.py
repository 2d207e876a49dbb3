"""Pacing one-shot execs to the CPUs.

A GRPO client fans a group out wide (32, 64, 256 grades in flight), far more
than a laptop or a CI runner has CPUs. Started all at once, the guests only
take turns on the CPUs, and each costs more CPU than it would alone: every
extra live guest evicts the others' copy-on-write pages and interpreter state
from the caches (measured here on 2 CPUs: about 12 ms of CPU per grade at 32
in flight, about 9 ms at 2). So one-shots take a *turn* first: at most
``slots`` run at once (default: one per CPU), the rest wait in arrival order
and are counted as ``queued`` in ``/v1/health``.

Each paced turn owns one of the server's CPUs while it runs (extra turns,
and turns beyond the CPUs, own none). The exec learns which from
``COLLIMATE_CPU``; nothing pins it there, but a program whose processes
hand over to each other many times a second (the SDK's grader, its
spawner and the candidates' processes) keeps them there: a handover on one
CPU is a context switch, a handover to another is a wake-up there (an
inter-processor interrupt, often an idle CPU woken), which in a VM costs
more than the switch itself. Two graders on two CPUs then never take each
other's CPU.

The queue is work-conserving: a turn taken by code that sleeps or waits
(``time.sleep``, a subprocess, a lock) must not hold back the others while
the CPUs idle. While execs wait, the queue looks at the machine's runnable
task count every ``poll_s`` and lets the next one in whenever a CPU would
otherwise sit idle. Sessions are not paced: their execs are already serial
per session, and an agent waits on each one.

Waiting happens before a clone is taken and before the exec's timeout
starts: the code's time limit is its own, whatever the queue.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import os
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence

LOADAVG = "/proc/loadavg"
IDLE_LOOKS = 2  # polls in a row that must find a CPU idle before an extra turn


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def usable_cpu_ids() -> list[int]:
    """The CPUs this process may run on, by number."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def runnable_tasks() -> int | None:
    """Tasks running or waiting for a CPU right now, machine-wide (the
    fourth field of ``/proc/loadavg``, the caller included), or None where
    the kernel does not say (then the queue never lets extra execs in)."""
    try:
        with open(LOADAVG, "rb") as fh:
            fields = fh.read().split()
        return int(fields[3].split(b"/")[0])
    except (OSError, IndexError, ValueError):
        return None


class RunQueue:
    """At most ``slots`` turns at once (0: no limit), handed out first come,
    first served; plus one extra turn whenever the CPUs would idle while
    someone waits (see the module docstring). A paced turn owns one of
    ``cpu_ids`` (default: this process's CPUs) while one is free."""

    def __init__(
        self,
        slots: int,
        *,
        cpus: int | None = None,
        cpu_ids: Sequence[int] | None = None,
        poll_s: float = 0.005,
        load: Callable[[], int | None] = runnable_tasks,
    ) -> None:
        if slots < 0:
            raise ValueError("run slots must be >= 0 (0 = no pacing)")
        if poll_s <= 0:
            raise ValueError("poll_s must be > 0")
        self.slots = slots
        self.cpus = cpus if cpus is not None else usable_cpus()
        self.poll_s = poll_s
        self._load = load
        self.running = 0  # turns held right now
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._poller: asyncio.TimerHandle | None = None
        self._idle_looks = 0  # polls in a row that found a CPU idle
        # CPUs no turn owns right now (none when the queue does not pace)
        ids = usable_cpu_ids() if cpu_ids is None else sorted(set(cpu_ids))
        self._free_cpus: list[int] = ids if slots else []

    @property
    def waiting(self) -> int:
        return sum(1 for fut in self._waiters if not fut.done())

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[int | None]:
        """Hold one turn for the duration of the block; the block gets the
        CPU the turn owns, or None (an extra turn, or every CPU owned)."""
        await self._acquire()
        cpu = self._free_cpus.pop(0) if self._free_cpus else None
        try:
            yield cpu
        finally:
            if cpu is not None:
                bisect.insort(self._free_cpus, cpu)
            self.running -= 1
            self._hand_on()

    async def _acquire(self) -> None:
        if not self.slots or (self.running < self.slots and not self.waiting):
            self.running += 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        self._schedule_poll()
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                # let in and cancelled in the same breath: the turn passes on
                self.running -= 1
                self._hand_on()
            raise
        finally:
            with contextlib.suppress(ValueError):
                self._waiters.remove(fut)

    def _let_in_next(self) -> bool:
        """Give the first live waiter its turn (counted from now)."""
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                self.running += 1
                fut.set_result(None)
                return True
        return False

    def _hand_on(self) -> None:
        while self.running < self.slots and self._let_in_next():
            pass

    def _schedule_poll(self) -> None:
        if self._poller is None:
            loop = asyncio.get_running_loop()
            self._poller = loop.call_later(self.poll_s, self._poll)

    def _poll(self) -> None:
        """While someone waits: a turn more for each CPU that would idle."""
        self._poller = None
        if not self.waiting:
            self._idle_looks = 0
            return
        runnable = self._load()
        # (the server itself is one of the runnable tasks right now)
        idle = 0 if runnable is None else self.cpus - (runnable - 1)
        # idle at two looks in a row: not a gap between two execs' steps
        self._idle_looks = self._idle_looks + 1 if idle > 0 else 0
        if self._idle_looks >= IDLE_LOOKS:
            while idle > 0 and self._let_in_next():
                idle -= 1
        if self.waiting:
            self._schedule_poll()
