"""The backend's process tree and memory, read from ``/proc`` (Linux).

A leak check needs the server's own view of what it started: every process
whose parent chain leads to the server's pid (namespaced clones included:
the host's ``/proc`` sees them with host pids).
"""

from __future__ import annotations

import os
from pathlib import Path


def _stat(pid: int) -> tuple[int, int] | None:
    """(ppid, start time in clock ticks) of ``pid``, or ``None`` if gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2 :].split()
    return int(fields[1]), int(fields[19])


def descendants(root: int) -> dict[int, int]:
    """pid -> start time of every live descendant of ``root``."""
    parents: dict[int, list[tuple[int, int]]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat(int(entry))
            if st is not None:
                parents.setdefault(st[0], []).append((int(entry), st[1]))
    found: dict[int, int] = {}
    todo = [root]
    while todo:
        for pid, start in parents.get(todo.pop(), []):
            if pid not in found:
                found[pid] = start
                todo.append(pid)
    return found


def still_alive(seen: dict[int, int]) -> int:
    """How many of ``seen`` (pid -> start time) still run (same pid, same start)."""
    alive = 0
    for pid, start in seen.items():
        st = _stat(pid)
        if st is not None and st[1] == start:
            alive += 1
    return alive


def rss_mib(pid: int) -> float:
    """Resident memory of ``pid`` in MiB (0 if gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0
