"""Coalescing: single grades that arrive together are sent as packs.

SkyRL, slime and verl call a reward one sample at a time, from many
threads or many tasks of one event loop. Each such ``grade()`` would pay a
whole exec. Here concurrent single grades to the same target (endpoint,
template, timeout) meet in a :class:`_Pool`; the first to arrive
*gathers* the others, then the gathered grades are planned into packs
(:func:`.plan.chunk`) for the target's free slots, and each pack is sent
by one of its own callers, with that caller's client. Every caller gets
exactly its own result or its own error, with a lone grade's failure
semantics.

When the gathered grades leave (:meth:`_Pool.wait_left`):

* a grade that arrives alone (nothing of its target in flight, nobody
  else waiting) leaves at once: it never waits for nothing;
* a full pack (:data:`FULL`) leaves at once;
* otherwise they leave once no other grade has joined for
  :data:`WINDOW_S` (a burst of callers, e.g. the threads a pack's results
  just woke, is caught whole), or as soon as as many have joined as the
  packs that came back carried (those callers are all here again),
  provided a slot of the target is free and they are not a sliver beside
  the packs already in flight (that would keep one caller ping-ponging
  alone next to a pack of all the others); never later than
  :data:`HOLD_S` after the first arrived.

On an event loop the gatherer first yields once, so the tasks started in
the same turn (``asyncio.gather`` of 256 grades) join before anything
leaves. Threads share one pool per target; each event loop has its own
(its clients belong to it).

What a pack did not grade follows the plan (:func:`.plan.follow_up`): a
candidate to grade alone is graded by its own caller; one to re-pack joins
the pool again and leaves with the next pack.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from .plan import MAX_AUTO_PACK, Job, Unit, chunk
from .result import Graded, GradeResult
from .run import Report, Route, run_unit, run_unit_async
from .targets import endpoint_of, facts, facts_async

__all__ = ["HOLD_S", "WINDOW_S", "grade_coalesced", "grade_coalesced_async"]

#: How long after the last arrival a gathering waits for one more.
WINDOW_S: Final = 0.005
#: The longest a grade waits to leave (for a free slot of the target, or for
#: company worth a pack), counted from the first arrival.
HOLD_S: Final = 0.25
#: Grades waiting that leave at once (a full pack).
FULL: Final = MAX_AUTO_PACK
#: The smallest pack a gathering is split into to fill several free slots.
MIN_SPLIT: Final = 8
#: Execs at once assumed of a target that does not say (grade_batch's default).
_DEFAULT_EXECS: Final = 24

# What a caller is told to do next.
_SEND = "send"  # send this pack (a list of entries, the caller's among them)
_DONE = "done"  # here is your outcome
_ALONE = "alone"  # grade yourself alone
_AGAIN = "again"  # join the pool again (re-packed)


class _Box:
    """Where a thread's next instruction arrives."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._event = threading.Event()
        self._value: tuple[str, Any] = ("", None)
        self.gone = False

    def put(self, kind: str, value: Any = None) -> bool:
        """Deliver (False: its caller left, nobody takes it)."""
        with self._lock:
            if self.gone:
                return False
            self._value = (kind, value)
            self._event.set()
            return True

    def take(self) -> tuple[str, Any]:
        self._event.wait()
        with self._lock:
            self._event.clear()
            return self._value

    def leave(self) -> tuple[str, Any] | None:
        """Take nothing more; the instruction that arrived untaken, if any."""
        with self._lock:
            self.gone = True
            return self._value if self._event.is_set() else None


class _LoopBox:
    """Where a task's next instruction arrives (on its own loop)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._fut: asyncio.Future[tuple[str, Any]] = loop.create_future()
        self._left = False

    def put(self, kind: str, value: Any = None) -> bool:
        """Deliver (False: its task left, nobody takes it)."""
        if self._left or self._fut.done():
            return False
        self._fut.set_result((kind, value))
        return True

    async def take(self) -> tuple[str, Any]:
        value = await self._fut
        self._fut = self._loop.create_future()
        return value

    def leave(self) -> tuple[str, Any] | None:
        """Take nothing more; the instruction that arrived untaken, if any."""
        self._left = True
        if self._fut.done() and not self._fut.cancelled():
            return self._fut.result()
        return None


@dataclass(eq=False)
class _Entry:
    job: Job
    client: Any
    box: Any  # _Box or _LoopBox


def _settle(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


@dataclass(eq=False)
class _Pool:
    """The grades waiting for one target, and its execs in flight."""

    queue: list[_Entry] = field(default_factory=list)
    gathering: bool = False
    last_join: float = 0.0
    busy: int = 0  # execs in flight (packs and lone grades)
    flying: int = 0  # grades in those execs
    returned: int = 0  # grades whose execs came back since the last seal
    slots: int = _DEFAULT_EXECS  # execs the target runs at once
    cond: threading.Condition = field(default_factory=threading.Condition)
    wake: asyncio.Future[None] | None = None  # (pools of a loop)

    def _nudge(self) -> None:
        """Wake the gatherer to look again (under ``cond``)."""
        self.cond.notify_all()
        if self.wake is not None:
            _settle(self.wake)

    def join(self, entry: _Entry) -> bool:
        """Queue ``entry``; True when its caller must gather."""
        with self.cond:
            self.queue.append(entry)
            self.last_join = time.monotonic()
            if self.gathering:
                self._nudge()  # (the gatherer looks again: company may be enough now)
                return False
            self.gathering = True
            return True

    def alone(self) -> bool:
        """Nothing else of this target is waiting or in flight."""
        return self.busy == 0 and len(self.queue) == 1

    def wait_left(self, since: float) -> float | None:
        """Seconds the gathering that began at ``since`` may still wait
        before it looks again (None: leave now); see the module's doc."""
        now = time.monotonic()
        hold = since + HOLD_S - now
        if len(self.queue) >= FULL or hold <= 0:
            return None
        if self.busy >= self.slots:
            return hold  # (woken when a slot frees)
        if self.busy and 2 * len(self.queue) * self.busy < self.flying:
            return hold  # (woken when a pack comes back)
        if self.returned and len(self.queue) >= self.returned:
            return None  # the callers of what came back are all here again
        quiet = self.last_join + WINDOW_S - now
        return min(quiet, hold) if quiet > 0 else None

    def seal(self) -> list[list[_Entry]]:
        """Take every waiting grade, planned into packs for the target's
        free slots (one entry: alone)."""
        with self.cond:
            entries, self.queue, self.gathering = self.queue, [], False
            self.returned = 0
            if not entries:
                return []
            free = max(1, self.slots - self.busy)
            if self.flying * self.slots < len(entries):
                free = self.slots  # (what is in flight is small beside this: soon done)
            size = min(FULL, max(MIN_SPLIT, -(-len(entries) // free)))
            by_job = {id(e.job): e for e in entries}
            units = chunk([e.job for e in entries], size)
            self.busy += len(units)
            self.flying += len(entries)
        return [[by_job[id(job)] for job in unit.jobs] for unit in units]

    def take_alone(self) -> bool:
        """Count a grade in flight at once if nothing else of the target is
        waiting, gathering or in flight (True: it goes alone, now)."""
        with self.cond:
            if self.queue or self.gathering or self.busy:
                return False
            self.busy += 1
            self.flying += 1
            self.returned = 0  # (idle: what came back before is history)
            return True

    def started(self, grades: int) -> None:
        with self.cond:
            self.busy += 1
            self.flying += grades

    def finished(self, grades: int, *, came_back: bool = True) -> None:
        """An exec of ``grades`` ended; ``came_back``: its callers may join
        again (not a lone grade that found the pool idle)."""
        with self.cond:
            self.busy -= 1
            self.flying -= grades
            self.returned += grades if came_back else 0
            self._nudge()


def _give(pool: _Pool, pack: list[_Entry], skip: _Entry | None = None) -> None:
    """Hand ``pack`` to the first of its callers still there, to send it."""
    for entry in pack:
        if entry is not skip and entry.box.put(_SEND, pack):
            return
    pool.finished(len(pack))  # (all gone: nobody wants it)


def _hand_out(pool: _Pool, packs: Sequence[list[_Entry]]) -> None:
    for pack in packs:
        _give(pool, pack)


def _instructions(entries: Sequence[_Entry], report: Report) -> dict[int, tuple[str, Any]]:
    """Per entry (by id), what its caller does next after ``report``."""
    out: dict[int, tuple[str, Any]] = {}
    by_job = {id(e.job): e for e in entries}
    for job, outcome in report.finished:
        out[id(by_job[id(job)])] = (_DONE, outcome)
    for unit in report.follow:
        for job in unit.jobs:
            out[id(by_job[id(job)])] = (_AGAIN, None) if unit.packed else (_ALONE, None)
    return out


def _deliver(entries: Sequence[_Entry], report: Report, me: _Entry) -> tuple[str, Any]:
    """Tell every other caller of the pack what to do; return my own."""
    told = _instructions(entries, report)
    for entry in entries:
        if entry is not me:
            entry.box.put(*told.get(id(entry), (_ALONE, None)))
    return told.get(id(me), (_ALONE, None))


def _failed(entries: Sequence[_Entry], me: _Entry, exc: BaseException) -> None:
    """The pack ``me`` was sending ended in ``exc`` (a bug, or its task was
    cancelled): the others grade alone, or are sent again."""
    told = _ALONE if isinstance(exc, Exception) else _AGAIN
    for entry in entries:
        if entry is not me:
            entry.box.put(told)


def _result(outcome: Graded) -> GradeResult:
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


_Key = tuple[str, str, int]


class _Pools:
    """Pools by target: one set for threads, one per event loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._threads: dict[_Key, _Pool] = {}
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[_Key, _Pool]] = (
            weakref.WeakKeyDictionary()
        )

    def for_threads(self, key: _Key) -> _Pool:
        with self._lock:
            pool = self._threads.get(key)
            if pool is None:
                pool = self._threads[key] = _Pool()
            return pool

    def for_loop(self, loop: asyncio.AbstractEventLoop, key: _Key) -> _Pool:
        with self._lock:
            pools = self._loops.setdefault(loop, {})
            pool = pools.get(key)
            if pool is None:
                pool = pools[key] = _Pool()
            return pool


_pools = _Pools()


def _key(client: Any, route: Route) -> _Key:
    return endpoint_of(client), route.template_id, route.timeout_seconds


@contextlib.contextmanager
def _sending(pool: _Pool, pack: list[_Entry], me: _Entry) -> Iterator[None]:
    """Around a pack's exec, in either flavour: a failure reaches every
    caller in the pack, and the pool counts the pack as finished whatever
    happened."""
    try:
        yield
    except BaseException as exc:
        _failed(pack, me, exc)
        raise
    finally:
        pool.finished(len(pack))


# -- threads ----------------------------------------------------------------


def _gather(pool: _Pool, client: Any) -> None:
    try:
        pool.slots = facts(client).slots or _DEFAULT_EXECS
        since = time.monotonic()
        with pool.cond:
            if not pool.alone():
                while (left := pool.wait_left(since)) is not None:
                    pool.cond.wait(left)
    finally:  # (whatever happened: the others still leave)
        _hand_out(pool, pool.seal())


def _send(
    pool: _Pool, client: Any, route: Route, pack: list[_Entry], me: _Entry
) -> tuple[str, Any]:
    with _sending(pool, pack, me):
        report = run_unit(client, route, Unit(tuple(e.job for e in pack)))
    return _deliver(pack, report, me)


def _alone(pool: _Pool, client: Any, route: Route, job: Job, started: bool = False) -> Graded:
    if not started:
        pool.started(1)
    try:
        return run_unit(client, route, Unit((job,))).finished[0][1]
    finally:
        pool.finished(1, came_back=not started)


def grade_coalesced(client: Any, route: Route, job: Job) -> GradeResult:
    """Grade ``job`` with a blocking client, in a pack with the grades that
    other threads send to the same target at the same time."""
    pool = _pools.for_threads(_key(client, route))
    if pool.take_alone():  # nothing else of the target waiting or in flight
        return _result(_alone(pool, client, route, job, started=True))
    me = _Entry(job, client, _Box())
    while True:
        try:
            if pool.join(me):
                _gather(pool, client)
            kind, value = me.box.take()
        except BaseException:
            _leave(pool, me)
            raise
        if kind == _SEND:
            kind, value = _send(pool, client, route, value, me)
        if kind == _DONE:
            return _result(value)
        if kind == _ALONE:
            return _result(_alone(pool, client, route, job))


# -- an event loop ----------------------------------------------------------


async def _gather_async(pool: _Pool, client: Any) -> None:
    try:
        pool.slots = (await facts_async(client)).slots or _DEFAULT_EXECS
        since = time.monotonic()
        await asyncio.sleep(0)  # the tasks started in this turn join first
        if not pool.alone():
            loop = asyncio.get_running_loop()
            while (left := pool.wait_left(since)) is not None:
                pool.wake = wake = loop.create_future()
                timer = loop.call_later(left, _settle, wake)
                try:
                    await wake
                finally:
                    timer.cancel()
                    pool.wake = None
    finally:  # (even cancelled: the others still leave)
        _hand_out(pool, pool.seal())


async def _send_async(
    pool: _Pool, client: Any, route: Route, pack: list[_Entry], me: _Entry
) -> tuple[str, Any]:
    with _sending(pool, pack, me):
        report = await run_unit_async(client, route, Unit(tuple(e.job for e in pack)))
    return _deliver(pack, report, me)


async def _alone_async(pool: _Pool, client: Any, route: Route, job: Job) -> Graded:
    pool.started(1)
    try:
        return (await run_unit_async(client, route, Unit((job,)))).finished[0][1]
    finally:
        pool.finished(1)


def _leave(pool: _Pool, me: _Entry) -> None:
    """A caller interrupted (a task cancelled, a thread's KeyboardInterrupt)
    leaves: out of the queue, and a pack it was to send passes to another
    of its callers."""
    held = me.box.leave()
    with pool.cond:
        if me in pool.queue:
            pool.queue.remove(me)
            return
    if held is not None and held[0] == _SEND:
        _give(pool, held[1], skip=me)


async def grade_coalesced_async(client: Any, route: Route, job: Job) -> GradeResult:
    """Grade ``job`` with an async client, in a pack with the grades other
    tasks of this loop send to the same target at the same time."""
    loop = asyncio.get_running_loop()
    pool = _pools.for_loop(loop, _key(client, route))
    me = _Entry(job, client, _LoopBox(loop))
    while True:
        try:
            if pool.join(me):
                await _gather_async(pool, client)
            kind, value = await me.box.take()
        except BaseException:
            _leave(pool, me)
            raise
        if kind == _SEND:
            kind, value = await _send_async(pool, client, route, value, me)
        if kind == _DONE:
            return _result(value)
        if kind == _ALONE:
            return _result(await _alone_async(pool, client, route, job))
