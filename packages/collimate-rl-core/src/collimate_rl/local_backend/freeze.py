"""Suspend and resume a clone: its processes really stop (SIGSTOP) and
continue (SIGCONT).

A clone's processes are the descendants of its clone process (in a pid
namespace every orphan is re-parented to it; in process mode it is their
subreaper), found from the host's ``/proc``. The clone process itself keeps
running: it is the machine, not the workload, and the engine still talks to
it (to kill a suspended clone, or wipe it for reuse), and it forks nothing
more while its processes are stopped and no exec comes, but for the one
standby due a moment after an exec ended. Stopping repeats until a pass
finds nothing new, then once more after that moment, so a process forked
during the sweep is caught.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process on the host."""
    out: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        out[int(entry)] = int(fields[1])
    return out


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (not ``pid`` itself)."""
    children: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    found: list[int] = []
    frontier = [pid]
    while frontier:
        for child in children.get(frontier.pop(), ()):
            found.append(child)
            frontier.append(child)
    return found


def process_state(pid: int) -> str | None:
    """The one-letter state of ``/proc/<pid>/stat`` (``T`` = stopped), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0].decode()
    except OSError:
        return None


def stop_tree(pid: int, *, passes: int = 20, settle_s: float = 0.1) -> int:
    """SIGSTOP every descendant of ``pid``; the number stopped. Blocking
    (run it off the event loop): after a first quiet sweep it waits
    ``settle_s`` and sweeps again, for the exec child the clone forks a
    moment after an exec ended (its next standby)."""
    stopped: set[int] = set()
    for settle in (0.0, settle_s):
        time.sleep(settle)
        for _ in range(passes):
            fresh = [p for p in descendants(pid) if p not in stopped]
            if not fresh:
                break
            for p in fresh:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(p, signal.SIGSTOP)
                stopped.add(p)
    return len(stopped)


def continue_tree(pid: int) -> int:
    """SIGCONT every descendant of ``pid``; the number continued."""
    count = 0
    for p in descendants(pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p, signal.SIGCONT)
            count += 1
    return count
