"""The spawner: a fresh interpreter that never held the tests, forking one
process per candidate.

The grader starts the worker's program (this module, :mod:`.candidate` and
:mod:`.spawning`, with :mod:`..separation`: ``WORKER_PARTS``, shipped on
their own) with ``python -S -I -c`` (see ``remote._start_worker``), or hands
it to the guest's clean twin: a new address space, not a fork of the
grader, so nothing that decides a reward (expected outputs, a reference
solution, test source, the verdict's fd) was ever in the memory a
candidate can read. On the grader's word it forks one process per
candidate (``f``), confined first (:mod:`..separation`), and kills and
reaps it (``w``), sweeping whatever that candidate left in a pack. It never
holds a candidate's code: each process gets its own from the grader, and
serves it (:mod:`.candidate`).

Messages on its socket are a 4-byte big-endian length and a marshal dump
(:func:`.candidate._w_send`), or the short commands above.
"""

# The guest may run Python 3.8 with nothing imported beyond its preload:
# no zip(strict=), no contextlib, and %-formatting is as good as any.
# ruff: noqa: UP031, SIM105
from __future__ import annotations

import os
import sys
from time import monotonic as _w_monotonic
from time import sleep as _w_sleep

from ..separation import _w_separator
from .candidate import _Candidate, _serve, _w_alarm, _w_recv, _w_send
from .spawning import _w_raw_fork, _WSeeds

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - typing only, never imported in the guest
    from typing import NoReturn

_W_FD = 4  # a file descriptor in SCM_RIGHTS data: a C int
_W_BAD_SEED = object()  # a seed ``_WSeeds`` cannot read: its candidate's process ends at once
_W_CHILDREN = ""  # the spawner's /proc children list (set by ``_w_subreaper``)


def _worker_main() -> NoReturn:
    """The spawner's life: boot, then fork candidates' processes on request."""
    import _socket
    import gc

    _signal = __import__("_signal")  # (not ``signal``: its enums cost a fresh interpreter ~5 ms)

    os.closerange(4, 1 << 16)  # nothing of the grader's but the one socket (fd 3)
    sock = _socket.socket(fileno=3)
    try:
        boot = _w_recv(sock)
    except Exception:
        os._exit(0)
    sys.path[:] = list(boot["path"])
    env = boot.get("env")
    if env is not None:  # the exec's environment, for every candidate
        # (changed where it differs only: a twin has most of it already, and
        # each variable set is pages copied on write)
        for key in [k for k in os.environ if k not in env]:
            del os.environ[key]
        for key, value in env.items():
            if os.environ.get(key) != value:
                os.environ[key] = value
    if boot.get("cpus"):
        try:  # the grader's CPU (its turn's): every candidate inherits it
            os.sched_setaffinity(0, boot["cpus"])
        except (AttributeError, OSError):
            pass
    _signal.signal(_signal.SIGALRM, _w_alarm)
    import random  # seeded per candidate: a fresh interpreter's draws would differ

    for name in boot.get("preload", ()):
        # what the warm template had imported: a pack's candidates fork from
        # here and would otherwise each pay for the same imports
        try:
            __import__(name)
        except BaseException:
            pass

    reaper = None
    packed = bool(boot.get("sweep"))
    # each candidate's process kept apart (see separation.py): required in a
    # pack, where siblings share the exec; alone, where it is cheap (a fresh
    # interpreter would import ctypes for it: ~5 ms, a quarter of its start)
    confine, unconfined = (
        _w_separator()
        if packed or "ctypes" in sys.modules
        else (None, "a lone candidate in a fresh interpreter")
    )
    if packed:  # a pack: many candidates will fork from here
        reaper = _w_subreaper() or (
            None if unconfined is None else "candidates cannot be kept apart: " + unconfined
        )
        if boot.get("warm", True):
            _w_warm_up()
        if hasattr(gc, "freeze"):  # (no collection first: it costs a pack's start ~3 ms)
            gc.freeze()
    _w_send(sock, "ok" if reaper is None else reaper)
    room = _socket.CMSG_SPACE(_W_FD)
    # Each turn of this loop follows a fork, after which every page the
    # spawner writes is a copy-on-write fault of its own: it keeps to a few
    # objects, bound here.
    raw_fork = _w_raw_fork() if packed else None
    recvmsg, send, fork, close = sock.recvmsg, sock.send, raw_fork or os.fork, os.close
    seeds = _WSeeds(random, boot.get("state"), raw_fork is not None)
    given, state = b"", None
    sol_socket, scm_rights, byteorder = _socket.SOL_SOCKET, _socket.SCM_RIGHTS, sys.byteorder
    sweep = packed and confine is not None  # (kill(-1) would reach the grader otherwise)
    while True:
        try:
            msg, ancillary, _flags, _addr = recvmsg(256, room)
        except OSError:
            break
        if not msg:
            break
        fd = None
        for level, kind, data in ancillary:
            if level == sol_socket and kind == scm_rights and len(data) >= _W_FD:
                fd = int.from_bytes(data[:_W_FD], byteorder)
        if msg[:2] == b"f " and fd is not None:
            seed = msg[msg.rindex(b" ") + 1 :]
            if seed != given:
                try:
                    given, state = seed, seeds.take(seed)
                except Exception:  # (not a seed: its candidate's process ends at once)
                    given, state = seed, _W_BAD_SEED
            pid = fork()
            if pid < 0:
                raise OSError("fork failed")  # (as os.fork would: the spawner is gone)
            if pid == 0:
                try:
                    sock.close()
                    if state is _W_BAD_SEED:
                        os._exit(0)
                    if state is not None:
                        random.setstate(state)
                    elif raw_fork is not None and seeds.unseeded:
                        random.seed()  # (what random's at-fork hook does after os.fork)
                    conn = _socket.socket(fileno=fd)
                    if confine is not None and not confine() and packed:
                        os._exit(0)  # (see separation._w_separator: not expected)
                except BaseException:
                    os._exit(0)
                _serve(conn)
            close(fd)
            send(b"%d" % pid)
        elif msg[:2] == b"w ":
            pid = int(msg[2:])
            try:
                os.kill(pid, 9)
            except OSError:
                pass
            try:
                status = os.waitpid(pid, 0)[1]
            except OSError:
                status = 0
            left = _w_kill_descendants() if sweep else None
            send(b"%d " % status if left is None else ("%d %s" % (status, left)).encode())
        elif fd is not None:
            close(fd)
    os._exit(0)


class _WNull:
    """A connection that drops what it is sent (for ``_w_warm_up``)."""

    def sendall(self, data: bytes) -> None:
        pass


def _w_warm_up() -> None:
    """Run a candidate's code path a few dozen times here, on a harmless
    module, then freeze what the spawner holds: the interpreter's
    specialising of that code, and the collector walking inherited objects,
    would otherwise write to (and so copy) those pages in every candidate's
    process. (Measured: a pack's candidates loaded in 1.3 ms without it.)
    A template that preloads the grader has this done once, in its zygote
    (``__collimate_warm__``)."""
    import time

    name = "_collimate_warm_up"
    code = compile("def %s(*a, **k):\n    return a\n" % name, name, "exec")
    try:
        for i in range(64):
            cand = _Candidate(_WNull(), code)
            cand.deadline_left = time.monotonic() + 60.0
            cand.load({"module": name, "path": name, "aliases": [name]})
            cand.batch({"entry": name, "calls": [([i], {}), ((i, "x"), {})]})
            cand.call({"target": ("name", name), "args": [("v", i)], "kwargs": []})
    except BaseException:
        pass
    sys.modules.pop(name, None)


def _w_subreaper() -> str | None:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
            return "prctl(PR_SET_CHILD_SUBREAPER) failed (errno %d)" % ctypes.get_errno()
    except Exception as exc:  # no ctypes in this guest
        return "cannot become a child subreaper: %s" % exc
    global _W_CHILDREN
    _W_CHILDREN = "/proc/self/task/%d/children" % os.getpid()
    if not os.path.exists(_W_CHILDREN):
        return "this guest's /proc lists no children"
    return None


def _w_kill_descendants() -> str | None:
    """SIGKILL every process below the spawner, in one pass, and reap them
    all (orphans of a killed one come back to it, their subreaper).

    ``kill(-1)`` reaches exactly those: the spawner is in a Landlock domain
    of its own, each candidate in one nested in it (see ``separation.py``),
    and a signal never leaves its sender's domain, so the grader (outside)
    is spared. One pass is enough even for a fork bomb: a process with a
    SIGKILL pending cannot complete a fork.

    Every process a candidate can leave is below the spawner (a candidate
    cannot leave the process tree; its orphans come back here), so a
    spawner whose ``children`` file (``_W_CHILDREN``) is empty has nothing
    to kill: the usual case, read without raising anything (an exception
    here would write to pages every candidate's fork shares)."""
    try:
        fd = os.open(_W_CHILDREN, os.O_RDONLY)
        try:
            if not os.read(fd, 1):
                return None
        finally:
            os.close(fd)
    except OSError:
        pass
    deadline = _w_monotonic() + 5.0
    while True:
        try:
            os.kill(-1, 9)
        except OSError:  # (nothing left to signal)
            pass
        while True:
            try:
                pid = os.waitpid(-1, os.WNOHANG)[0]
            except ChildProcessError:
                return None
            if pid == 0:
                break
        if _w_monotonic() > deadline:
            return "processes kept coming back"
        _w_sleep(0.0005)
