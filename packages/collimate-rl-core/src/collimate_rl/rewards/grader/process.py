"""The candidate's process: forked without the verdict's fd, it reports
each check's raw result on a pipe that the grader collects."""

# The guest may run Python 3.8 with nothing imported beyond its preload:
# no zip(strict=), no contextlib, and %-formatting is as good as any.
# ruff: noqa: UP031, SIM105
from __future__ import annotations

import os
import signal

from .budget import _Abort, _Budget, _Results
from .wire import _DONE_BYTES, _Outbox

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - typing only, never imported in the guest
    from collections.abc import Callable
    from typing import Any, NoReturn


_MAX_RECORD = 1 << 24  # what the candidate's process may send in all, at most

_PEEK_S = 0.05  # how often a sleeping grader looks at the candidate's pipe

_BUSY_BYTES = 1 << 14  # found at one look: the grader reads as it comes


def _in_own_process(work: Callable[[Callable[[Any], None]], None], budget: _Budget) -> _Results:
    """Run ``work`` (everything the candidate's code touches) in a forked
    process of its own, and collect what it reports.

    The candidate never shares a process with the grader: code that walks
    the stack or the heap finds no verdict channel to forge (its process
    closed it), and crashing, ``os._exit`` or a segfault cost it only the
    checks it had not reported yet. The grader compares what it is sent,
    and believes a claim of a broken guest only if it sees one too. The
    candidate cannot reach the grader's memory or fds where the grader is
    not dumpable (the local backend makes every exec child so: then
    ``/proc/<ppid>`` and ptrace are closed to the same uid).
    """
    import random

    state = random.getstate()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the candidate's process
        try:
            os.close(read_fd)
            for fd in budget.private_fds:
                os.close(fd)
            # random reseeds itself from the OS in a forked child: the
            # candidate gets the exec's seeded state, as it would unforked
            random.setstate(state)
        except BaseException:
            os._exit(0)
        _report(work, write_fd)
    os.close(write_fd)
    return _collect(read_fd, pid, budget, lambda: os.waitpid(pid, 0)[1])


def _stay_on_turn_cpu() -> None:
    """Keep the grade's processes on the CPU the backend's turn owns, where
    it says which (``COLLIMATE_CPU``, see the local backend's run queue).
    The grader, a pack's spawner and the candidates' processes hand over to
    each other at every candidate; on one CPU a handover is a context
    switch, across two it is a wake-up of the other (an interrupt, an idle
    CPU woken), which in a VM costs more than the switch. Elsewhere (no
    hint, a CPU this process may not use) the scheduler decides."""
    cpu = os.environ.get("COLLIMATE_CPU", "")
    if not cpu.isdigit():
        return
    try:
        if int(cpu) in os.sched_getaffinity(0):
            os.sched_setaffinity(0, {int(cpu)})
    except (AttributeError, OSError):  # no affinity calls on this platform
        pass


def _report(work: Callable[[Callable[[Any], None]], None], fd: int) -> NoReturn:
    """The candidate's process: run ``work``, sending each record on ``fd``."""
    try:
        outbox = _Outbox(fd)
        work(outbox.put)
        outbox.put(("done",))
    except BaseException:
        pass
    os._exit(0)


def _collect(read_fd: int, pid: int, budget: _Budget, reap: Callable[[], int]) -> _Results:
    """What the candidate's process ``pid`` reports on ``read_fd``, within the
    budget; then it is killed, and ``reap`` returns its wait status."""
    results = _Results()
    inbox = _Inbox()
    try:
        ended = inbox.gather(read_fd, pid, budget)
    finally:
        os.close(read_fd)
        try:
            os.kill(pid, signal.SIGKILL)  # done or not: nothing of it runs on
        except OSError:
            pass
        status = reap()
    chunks = inbox.chunks
    try:
        _parse(results, b"".join(chunks))
    except Exception as exc:  # bytes marshal did not write, or cut short
        if ended in ("done", "eof"):
            ended = "garbage: %s" % exc
    if ended == "timeout":
        results.missing = ("timeout", "the exec budget ran out")
    elif ended == "flood":
        results.missing = ("error", "the candidate's process sent over %d bytes" % _MAX_RECORD)
    elif ended.startswith("garbage"):
        results.missing = ("error", "the candidate's process sent " + ended)
    elif ended == "eof" and os.WIFSIGNALED(status):
        results.missing = (
            "error",
            "the candidate's process died of signal %d" % os.WTERMSIG(status),
        )
    results.vouch(budget)
    return results


class _Inbox:
    """The grader's side of the candidate's pipe: bytes until the "done"
    record, the end, a flood or the budget, whichever comes first.

    Where the kernel offers a pidfd, the grader sleeps until the candidate's
    process exits instead of waking at every record, and reads once the
    process is gone, so it does next to nothing while the two share pages.
    It looks at the pipe every ``_PEEK_S``; when a look finds a big report
    flowing, it reads as it comes until a look finds the pipe quiet (a
    full pipe must not hold the writer back). Elsewhere it reads as the records come."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.size = 0
        self.tail = b""

    def take(self, chunk: bytes) -> str | None:
        self.chunks.append(chunk)
        self.size += len(chunk)
        self.tail = (self.tail + chunk)[-len(_DONE_BYTES) :]
        if self.tail == _DONE_BYTES:
            return "done"
        if self.size > _MAX_RECORD:
            return "flood"
        return None

    def gather(self, read_fd: int, pid: int, budget: _Budget) -> str:
        try:
            import select

            pidfd = os.pidfd_open(pid)  # type: ignore[attr-defined,unused-ignore]
        except Exception:  # an older kernel or Python
            return self.read_along(read_fd, budget)
        try:
            poller = select.poll()
            poller.register(pidfd, select.POLLIN)
            os.set_blocking(read_fd, False)
            busy = False  # the pipe watched too, while big reports flow
            while True:
                left = budget.left()
                if left <= 0:
                    return "timeout"
                events = poller.poll(min(left, _PEEK_S) * 1000.0)
                before = self.size
                ended = self.drain(read_fd)
                if ended is not None:
                    return ended
                if any(fd == pidfd for fd, _ in events):
                    return "eof"
                if not busy and self.size - before >= _BUSY_BYTES:
                    poller.register(read_fd, select.POLLIN)
                    busy = True
                elif busy and not events:  # a quiet look: back to sleep
                    poller.unregister(read_fd)
                    busy = False
        finally:
            os.close(pidfd)

    def drain(self, read_fd: int) -> str | None:
        while True:
            try:
                chunk = os.read(read_fd, 1 << 16)
            except BlockingIOError:
                return None
            if not chunk:
                return "eof"  # every holder of the pipe is gone
            ended = self.take(chunk)
            if ended is not None:
                return ended

    def read_along(self, read_fd: int, budget: _Budget) -> str:
        left = budget.left()
        try:
            if left <= 0:
                raise _Abort()
            signal.setitimer(signal.ITIMER_REAL, left)
            try:
                while True:
                    chunk = os.read(read_fd, 1 << 16)
                    if not chunk:
                        return "eof"
                    ended = self.take(chunk)
                    if ended is not None:
                        return ended
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except _Abort:
            return "timeout"


def _parse(results: _Results, data: bytes) -> None:
    """File every complete record in ``data``, in order."""
    import marshal

    at = 0
    while at + 4 <= len(data):
        size = int.from_bytes(data[at : at + 4], "big")
        if at + 4 + size > len(data):
            raise ValueError("a record cut short")
        if _take(results, marshal.loads(data[at + 4 : at + 4 + size])):
            return
        at += 4 + size


def _take(results: _Results, record: Any) -> bool:
    """File one record; True once the candidate's process said it is done."""
    if record == ("done",):
        return True
    if type(record) is tuple and len(record) == 2 and record[0] == "load":
        results.load = str(record[1])
    elif type(record) is tuple and len(record) == 3 and type(record[0]) is int:
        if record[0] not in results.checks:  # the first word on a check stands
            results.checks[record[0]] = (str(record[1]), record[2])
    else:
        raise ValueError("an unknown record")
    return False


class _SpawnerGone(Exception):
    """The spawner stopped answering: a candidate killed it."""
