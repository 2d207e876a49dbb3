"""The kernels living in sessions (``Sandbox.kernel()`` and its forks), as
the server sees them: for ``/v1/health``, and to reap idle ones.

A kernel is a guest process, started by the session's own code; the server
never hears of it. It finds them by their process name (the guest program
names each kernel ``collimate-kern``) among the descendants of the session's
clone, read from the host's ``/proc``. A guest can name any process so, but
that only counts (or gets reaped) processes of its own session.

Reaping kills the kernel process only: its keeper sees it die, removes its
files and kills the rest of its process group, as for any kernel that died.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterable

__all__ = ["KERNEL_COMM", "kernel_pids", "kill_kernels"]

#: the ``comm`` the guest program gives a kernel process (``guest/kernel_program.py``)
KERNEL_COMM = "collimate-kern"


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, comm) of every process on the host now (a zombie,
    dead but not yet reaped, is named as a kernel but is none any more)."""
    table: dict[int, tuple[int, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read().decode(errors="replace")
        except OSError:
            continue  # gone meanwhile
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        head, _, tail = stat.rpartition(")")
        fields = tail.split()
        if len(fields) < 2:
            continue
        comm = head.partition("(")[2] if fields[0] not in ("Z", "X") else ""
        table[int(entry)] = (int(fields[1]), comm)
    return table


def kernel_pids(roots: dict[str, int]) -> dict[str, list[int]]:
    """For each key of ``roots`` (a session id -> its clone's pid), the pids
    of the kernel processes descending from that pid (one scan for all)."""
    table = _processes()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _comm) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: dict[str, list[int]] = {}
    for key, root in roots.items():
        pending, kernels = [root], []
        seen = {root}
        while pending:
            pid = pending.pop()
            for child in children.get(pid, ()):
                if child in seen:
                    continue
                seen.add(child)
                pending.append(child)
                if table[child][1] == KERNEL_COMM:
                    kernels.append(child)
        found[key] = sorted(kernels)
    return found


def kill_kernels(pids: Iterable[int]) -> None:
    """SIGKILL each kernel (a pid gone meanwhile is fine)."""
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
