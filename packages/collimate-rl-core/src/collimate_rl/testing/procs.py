"""The local backend as a process of its own, and what it started (Linux).

A leak check needs the server's own view of what it started: every process
whose parent chain leads to the server's pid (namespaced clones included:
the host's ``/proc`` sees them with host pids). A backend in the checking
process would share its tree with everything else there, so the soaks (the
test's and ``reliability/soak.py``) start it as a process of its own with
:func:`serve_process`, read its tree and memory from ``/proc``, and stop it
with :func:`stop_process`.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from ..client import CollimateClient
from ..errors import CollimateError

__all__ = [
    "descendants",
    "rss_mib",
    "serve_process",
    "serve_with_banner",
    "start_time",
    "still_alive",
    "stop_process",
    "working_pythons",
]


def serve_process(*args: str, start_timeout_s: float = 60.0) -> tuple[subprocess.Popen[bytes], str]:
    """``python -m collimate_rl.local_backend --port <free> --log-level ERROR
    <args>`` on loopback; ``(the process, its URL)`` once it answers its
    health. A server that exits or stays silent past ``start_timeout_s`` is
    killed and reported as a ``RuntimeError``."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    cmd = [sys.executable, "-m", "collimate_rl.local_backend", "--port", str(port)]
    cmd += ["--log-level", "ERROR", *args]
    server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + start_timeout_s
    with CollimateClient(url, timeout=2, retries=0) as c:
        while True:
            try:
                c.health()
                return server, url
            except CollimateError:
                if server.poll() is not None or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
    server.kill()
    server.wait()
    raise RuntimeError("the backend did not start")


def serve_with_banner(*args: str) -> tuple[subprocess.Popen[str], str]:
    """``python -m collimate_rl.local_backend <args>`` and its start-up
    banner: its stderr up to the line naming its ``isolation:`` (an
    ``AssertionError`` with what it said if it ends before). The rest of its
    stderr is read in a thread of its own, so that the server never blocks
    on a full pipe."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "collimate_rl.local_backend", *args],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stderr is not None
    banner = ""
    for line in proc.stderr:
        banner += line
        if "isolation:" in line:
            break
    else:
        proc.wait(10)
        raise AssertionError(f"server did not start: {banner}")
    threading.Thread(target=lambda: list(proc.stderr or []), daemon=True).start()
    return proc, banner


def stop_process(server: subprocess.Popen[bytes], grace_s: float = 60.0) -> int:
    """Stop ``server`` as an operator would (SIGTERM: it lets answers finish),
    killing it if it is still there after ``grace_s``; its exit status."""
    server.send_signal(signal.SIGTERM)
    try:
        return server.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        server.kill()
        return server.wait()


def _stat(pid: int) -> tuple[int, int] | None:
    """(ppid, start time in clock ticks) of ``pid``, or ``None`` if gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2 :].split()
    return int(fields[1]), int(fields[19])


def start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks after boot), or None if there is no
    such process. A pid and its start name one process: pids are reused,
    soon where ``pid_max`` is small (32768 here)."""
    found = _stat(pid)
    return None if found is None else found[1]


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
    """How many of ``seen`` (pid -> start time) still run (same pid, same
    start: a pid the kernel gave to a new process does not count)."""
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


def working_pythons() -> dict[tuple[int, int], str]:
    """Each CPython 3.10 to 3.13 that runs here, by ``(major, minor)``: its
    ``python3.N`` on PATH, asked for its version (pyenv's shims answer only
    for the versions in ``PYENV_VERSION``, as CI sets it)."""
    found: dict[tuple[int, int], str] = {}
    for minor in (10, 11, 12, 13):
        exe = shutil.which(f"python3.{minor}")
        if exe is None:
            continue
        out = subprocess.run(
            [exe, "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
        )
        if out.returncode == 0:
            major, got = map(int, out.stdout.split())
            found[(major, got)] = exe
    return found
