"""The clean twin: a process forked by a standby exec child before its job
exists, that any code of the job can turn into a program of its own.

A grader must run each candidate in a process that never held the tests;
the exec child holds them as soon as its job arrives (the job's files are
written by it). Without help the grader starts a fresh interpreter for
that (about 20 ms here); the twin is the same warm interpreter, confined
the same way (private root, uid, rlimits, not dumpable), forked ahead of
time while nothing of a job was in it, so a grade gets a clean process for
the price of the fork that made it, taken before the job came.

Standbys fork one once any exec of the same template asked for one
(through ``COLLIMATE_CLEAN_TWIN_WANTED``, below): a server that only
runs plain one-shots never pays for the fork; on one that grades, the first
grade starts a fresh interpreter, the next ones find a twin. The job finds it through
``COLLIMATE_CLEAN_TWIN=<fd>:<pid>`` (a stream
socket, and the twin's pid). On that socket it sends one program: a 4-byte
big-endian length, a kind byte (``s``: UTF-8 source; ``m``: the marshal of
a code object, for this same interpreter), the payload; the twin runs it
with the socket on fd 3 (the SDK's grader sends its worker,
``collimate_rl/guest/grader/spawner.py``). The twin dies with its exec
child, used or not.
"""

from __future__ import annotations

import builtins
import marshal
import os
import signal
import socket

from .kernel import die_with_parent, make_dumpable, set_process_name

TYPE_CHECKING = False
if TYPE_CHECKING:  # never at run time: the zygote stays free of the typing module
    from typing import NoReturn

ENV = "COLLIMATE_CLEAN_TWIN"
#: ``<fd>`` of one byte shared by the zygote and everything forked from it
#: (its clones, their standbys): code that wants twins writes 1 there
#: (``os.pwrite(fd, b"\x01", 0)``), and from then on every standby of this
#: template forks one. Code could write it for no reason; all that buys is
#: a twin for every later exec.
WANTED_ENV = "COLLIMATE_CLEAN_TWIN_WANTED"

#: The shared byte, made when the zygote imports this module.
WANTED_FLAG_FD = os.memfd_create("collimate-twins-wanted", 0) if hasattr(os, "memfd_create") else -1
if WANTED_FLAG_FD >= 0:
    os.ftruncate(WANTED_FLAG_FD, 1)


def twins_wanted(fd: int) -> bool:
    """Whether code of this template asked for twins yet (``fd``: the flag)."""
    try:
        return os.pread(fd, 1, 0) == b"\x01"
    except OSError:
        return False


def start_clean_twin(keep_at: int, close: tuple[int, ...]) -> int:
    """Fork the twin; its socket is left at ``keep_at`` here (not
    inheritable); ``close``: fds the twin must not hold (the jobs socket,
    the report pipes). Returns the twin's pid."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    set_process_name(b"collimate-twin")  # (named before it exists: no reader sees it unnamed)
    pid = os.fork()
    if pid != 0:
        set_process_name(b"collimate-exec")
    if pid == 0:
        try:
            die_with_parent(signal.SIGKILL)
            # nothing in it to protect (its parent stays undumpable): the code
            # it runs may read its own /proc/self, as any process may
            make_dumpable()
            ours.close()
            for fd in close:
                os.close(fd)
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.dup2(theirs.fileno(), 3)
            os.closerange(4, 1 << 16)
            _wait_and_run()
        finally:
            os._exit(0)
    theirs.close()
    os.dup2(ours.fileno(), keep_at, inheritable=False)
    ours.close()
    return pid


def _read_exactly(fd: int, size: int) -> bytes:
    chunks = []
    while size:
        chunk = os.read(fd, size)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _wait_and_run() -> NoReturn:
    """Block until the job sends a program, then run it (never returns)."""
    try:
        size = int.from_bytes(_read_exactly(3, 4), "big")
        kind = _read_exactly(3, 1)
        payload = _read_exactly(3, size - 1)
        namespace = {"__name__": "__collimate_twin__", "__builtins__": builtins}
        if kind == b"m":
            program = marshal.loads(payload)
        else:
            program = compile(payload.decode("utf-8"), "<collimate-twin>", "exec")
        exec(program, namespace)
    except BaseException:
        pass
    os._exit(0)
