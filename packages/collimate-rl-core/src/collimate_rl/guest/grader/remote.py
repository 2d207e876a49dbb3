"""The grader's side of the candidate's process: start the clean spawner,
fork a candidate's process, and talk to it.

The candidate runs in a process forked from a clean interpreter (the
guest's clean twin, else a fresh one; :mod:`.spawner` runs there), never
from the grader: the grader's memory (the sealed tests, expected outputs,
references, the verdict's fd) was never copied into it. What the tests
that are code hold of it is in :mod:`.stand_ins`.
"""

# The guest may run Python 3.8 with nothing imported beyond its preload:
# no zip(strict=), no contextlib, and %-formatting is as good as any.
# ruff: noqa: UP031, SIM105
from __future__ import annotations

import marshal
import os
import sys

from .budget import _ALARM_HELD, _Abort, _Budget

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - typing only, never imported in the guest
    from typing import Any

_SPAWNER_ANSWER_S = 10.0  # a spawner silent this long is taken for gone
_MAX_REPLY = 1 << 24  # what one answer of the candidate's process may weigh
_FD_SIZE = 4
_TWIN_ENV = "COLLIMATE_CLEAN_TWIN"
_PEEK_S = 0.05  # how often a grader waiting for a candidate's exit looks at its socket
_BUSY_BYTES = 1 << 14  # found at one look: the grader reads as it comes


class _Gone(Exception):
    """The candidate's process stopped answering (ended, killed, timed out)."""

    def __init__(self, why: str) -> None:
        Exception.__init__(self, why)
        self.why = why


class _SpawnerGone(Exception):
    """The spawner stopped answering: a candidate killed or stopped it."""


class CandidateError(Exception):
    """A call of the candidate's code failed in a way Python has no
    exception for here (it timed out, ran out of memory, raised
    ``SystemExit`` or another ``BaseException``, or its process is gone)."""


# How a fresh interpreter takes its program (the protocol of the local
# backend's clean twin too, ``guest/zygote/twin.py``): on fd 3,
# a 4-byte big-endian length, a kind byte (``s``: source, ``m``: a code
# object's marshal), the payload.
_BOOTSTRAP = (
    "import os\n"
    "def r(n):\n"
    "    b = b''\n"
    "    while len(b) < n:\n"
    "        c = os.read(3, n - len(b))\n"
    "        if not c:\n"
    "            raise SystemExit\n"
    "        b += c\n"
    "    return b\n"
    "n = int.from_bytes(r(4), 'big')\n"
    "k = r(1)\n"
    "p = r(n - 1)\n"
    "import marshal\n"
    "exec(marshal.loads(p) if k == b'm' else compile(p, '<collimate-worker>', 'exec'),"
    " {'__name__': '__collimate_worker__'})\n"
)


def _worker_program() -> bytes:
    """The worker as it is sent (see ``_BOOTSTRAP``): its bytecode when this
    interpreter reads that bytecode's format, else its source."""
    code = globals().get("_WORKER_BYTECODE")
    ext = sys.modules.get("_frozen_importlib_external")
    if code and getattr(ext, "MAGIC_NUMBER", None) == globals().get("_WORKER_MAGIC"):
        return b"m" + bytes(code)
    return b"s" + _worker_source().encode("utf-8")


def _worker_source() -> str:
    """The worker's program: joined into the runtime by ``program.py`` as
    ``_WORKER_SOURCE``; read from the files of the guest package otherwise."""
    text = globals().get("_WORKER_SOURCE")
    if text:
        return str(text)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # collimate_rl/guest
    text = ""
    # (``WORKER_PARTS``, less their imports)
    for part in ("separation", "grader/spawning", "grader/candidate", "grader/spawner"):
        with open(os.path.join(here, part + ".py")) as fh:
            text += "".join(line for line in fh if not line.startswith(("from .", "from __f")))
    return text + '\nif __name__ != "__collimate_preload__":\n    _worker_main()\n'


class _Spawner:
    """The clean spawner: the guest's clean twin (a local backend's), else a
    fresh interpreter; it runs the worker, and never holds a candidate's code."""

    def __init__(self, codes: list[Any], sweep: bool, state: Any = None) -> None:
        self.codes = codes  # (kept here: each goes to its own candidate's process only)
        import _socket

        self.broken: str | None = None
        self.left_behind: str | None = None
        twin = _take_twin()
        if twin is not None:
            self.sock, self.pid = twin
            self._boot(sweep, state, twin=True)
            return
        ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM, 0)
        exe = sys.executable
        if not exe:
            self.broken = "cannot pack: this guest's Python does not know its executable"
            return
        null = os.devnull
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, null, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, null, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_OPEN, 2, null, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_DUP2, theirs.fileno(), 3),
        ]
        try:
            self.pid = os.posix_spawn(
                exe,
                [exe, "-S", "-I", "-c", _BOOTSTRAP],
                dict(os.environ),
                file_actions=actions,
            )
        except OSError as exc:
            self.broken = "cannot pack: cannot start %s: %s" % (exe, exc)
            return
        finally:
            theirs.close()
        self.sock = ours
        self._boot(sweep, state, twin=False)

    def _boot(self, sweep: bool, state: Any, twin: bool) -> None:
        ours = self.sock
        ours.settimeout(_SPAWNER_ANSWER_S)
        try:
            ready = globals().get("_WORKER_READY") if twin else None
            if ready is not None:  # the twin has it loaded and warmed (see __collimate_warm__)
                program = (
                    b"s"
                    + (
                        "import sys\nsys.modules[%r]._WORKER_READY['_worker_main']()\n"
                        % globals()["__name__"]
                    ).encode()
                )
            else:
                program = _worker_program()  # what the twin or the bootstrap runs
            ours.sendall(len(program).to_bytes(4, "big") + program)
            _send(
                ours,
                {
                    "path": list(sys.path),
                    "sweep": sweep,
                    "warm": ready is None,
                    "state": state,
                    # (a twin is the warm template itself: it has them)
                    "preload": _stdlib_loaded() if sweep and not twin else [],
                    # (a twin was forked before the grader kept to its turn's CPU)
                    "cpus": _own_cpus(),
                    # (and before the job's environment: the exec's seed, CPU, ...)
                    "env": {k: v for k, v in os.environ.items() if not k.startswith(_TWIN_ENV)},
                },
            )
            raw = ours.recv(4096)
            hello: Any = marshal.loads(raw[4:]) if len(raw) > 4 else ""
        except Exception:
            hello = ""
        if hello != "ok":
            self.broken = "cannot pack: %s" % (hello or "the spawner did not start")

    def fork(self, index: int, seed: str | None) -> _Conn:
        """A new process for candidate ``index`` (its code sent), or
        :class:`_SpawnerGone`."""
        return _without_alarm(self._fork, index, seed)  # type: ignore[no-any-return]

    def _fork(self, index: int, seed: str | None) -> _Conn:
        import _socket

        ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM, 0)
        try:
            self.sock.sendmsg(
                [("f %d %s" % (index, seed or "-")).encode()],
                [
                    (
                        _socket.SOL_SOCKET,
                        _socket.SCM_RIGHTS,
                        theirs.fileno().to_bytes(_FD_SIZE, sys.byteorder),
                    )
                ],
            )
            reply = self.sock.recv(64)
        except OSError:
            reply = b""
        finally:
            theirs.close()
        if not reply.isdigit():
            ours.close()
            raise _SpawnerGone()
        conn = _Conn(ours, int(reply), self)
        try:
            _send(ours, {"do": "code", "code": self.codes[index]})
        except (OSError, ValueError) as exc:
            conn.end("is gone: %s" % exc)
        return conn

    def reap(self, pid: int) -> int:
        """Kill and reap ``pid`` (and, in a pack, whatever it left); its
        wait status, or :class:`_SpawnerGone`."""
        return _without_alarm(self._reap, pid)  # type: ignore[no-any-return]

    def _reap(self, pid: int) -> int:
        try:
            self.sock.send(b"w %d" % pid)
            reply = self.sock.recv(4096).decode("utf-8", "replace")
        except OSError:
            reply = ""
        status, sep, why = reply.partition(" ")
        if not sep or not status.lstrip("-").isdigit():
            raise _SpawnerGone()
        if why:
            self.left_behind = why
        return int(status)

    def close(self) -> None:
        """Kill and reap the spawner; once (its pid is not used again, as
        it could be another process's by then), and for a spawner that
        never started too."""
        try:
            self.sock.close()
        except Exception:
            pass
        pid = self.__dict__.pop("pid", 0)
        if not pid:
            return
        try:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        except OSError:
            pass


def twin_pid() -> int | None:
    """The pid of the clean twin this guest offers (see ``_take_twin``), if any."""
    found = os.environ.get(_TWIN_ENV, "").partition(":")[2]
    return int(found) if found.isdigit() else None


def _take_twin() -> tuple[Any, int] | None:
    """The clean twin a local backend's exec child forked before its job
    came (``COLLIMATE_CLEAN_TWIN=<fd>:<pid>``): the same warm interpreter,
    with nothing of the job in it, that runs the worker it is sent. Taken
    once; a guest without one (a real daemon) gets a fresh interpreter."""
    import _socket

    wanted = os.environ.get(_TWIN_ENV + "_WANTED", "")
    if wanted.isdigit():  # a local backend: from now on, its execs get a twin
        try:
            os.pwrite(int(wanted), b"\x01", 0)
        except OSError:
            pass
    fd, _sep, pid = os.environ.pop(_TWIN_ENV, "").partition(":")
    if not fd.isdigit() or not pid.isdigit():
        return None
    try:
        return _socket.socket(fileno=int(fd)), int(pid)
    except OSError:
        return None


def _own_cpus() -> list[int] | None:
    """The CPUs this process may run on (the grader keeps to its turn's)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def _stdlib_loaded() -> list[str]:
    """The standard library modules this (warm) interpreter has imported,
    for a pack's spawner to import once, before it forks the candidates:
    forked from the warm template, they found these loaded, and so should
    they here (a pack's candidates would each pay for ``re`` or
    ``collections`` otherwise). Only top-level, public, standard names."""
    names = getattr(sys, "stdlib_module_names", None)
    if not names:
        return []
    return sorted(
        name
        for name in list(sys.modules)
        if "." not in name
        and not name.startswith("_")
        and name in names
        and name not in ("this", "antigravity")  # (imports with side effects)
    )


def _send(sock: Any, obj: Any) -> None:
    data = marshal.dumps(obj)
    sock.sendall(len(data).to_bytes(4, "big") + data)


class _Conn:
    """One candidate's process, as the grader talks to it."""

    def __init__(self, sock: Any, pid: int, spawner: _Spawner) -> None:
        self.sock = sock
        self.pid = pid
        self.spawner = spawner
        self.gone: str | None = None
        self.buffer = b""
        self.status: int | None = None
        self.exited = False  # (then everything it sent is in ``buffer``)

    def send(self, req: dict[str, Any], budget: _Budget) -> None:
        if self.gone is not None:
            raise _Gone(self.gone)
        req["left"] = max(0.0, budget.left())
        req["per_check"] = budget.per_check
        try:
            _send(self.sock, req)
        except (OSError, ValueError) as exc:
            self.end("is gone: %s" % exc)
            raise _Gone(self.gone or "gone") from None

    def receive(self, budget: _Budget) -> Any:
        """The next message, or :class:`_Gone` once the budget is spent or
        the process ended."""
        if self.gone is not None:
            raise _Gone(self.gone)
        while True:
            if len(self.buffer) >= 4:
                size = int.from_bytes(self.buffer[:4], "big")
                if size > _MAX_REPLY:
                    self.end("sent over %d bytes" % _MAX_REPLY)
                    raise _Gone(self.gone or "flood")
                if len(self.buffer) >= 4 + size:
                    data = self.buffer[4 : 4 + size]
                    self.buffer = self.buffer[4 + size :]
                    try:
                        return marshal.loads(data)
                    except Exception:
                        self.end("sent garbage")
                        raise _Gone(self.gone or "garbage") from None
            if self.exited:
                self.end("eof")
                raise _Gone("eof")
            left = budget.left()
            if left <= 0:
                raise self._silent()
            try:
                self.sock.settimeout(left + 0.05)
                chunk = self.sock.recv(1 << 16)
            except OSError:  # (a timeout is one)
                raise self._silent() from None
            if not chunk:
                self.end("eof")
                raise _Gone("eof")
            self.buffer += chunk

    def _silent(self) -> _Gone:
        """The process did not answer in time: it is ended, and the error
        says whether it was stopped (a ``SIGSTOP`` it sent itself, say) or
        only slow."""
        why = "stopped" if _is_stopped(self.pid) else "timeout"
        self.end(why)
        return _Gone(why)

    def settle(self, budget: _Budget) -> None:
        """Wait until the process has exited (it was told its last request),
        then take everything it sent: the grader sleeps instead of waking at
        every record (each wake-up is a switch between two processes). It
        looks at the socket every ``_PEEK_S``, and reads as the data comes
        while a big report flows (a full socket must not hold the writer).
        Without pidfds (an old kernel or Python), ``receive`` reads as it
        comes."""
        try:
            import select

            pidfd = os.pidfd_open(self.pid)  # type: ignore[attr-defined,unused-ignore]
        except Exception:
            return
        try:
            poller = select.poll()
            poller.register(pidfd, select.POLLIN)
            self.sock.setblocking(False)
            busy = False
            while True:
                left = budget.left()
                if left <= 0:
                    return
                events = poller.poll(min(left, _PEEK_S) * 1000.0)
                before = len(self.buffer)
                ended = self._drain()
                if ended or any(fd == pidfd for fd, _ in events):
                    self._drain()
                    self.exited = True
                    return
                if len(self.buffer) > _MAX_REPLY + 4:
                    return  # (``receive`` says it is a flood)
                if not busy and len(self.buffer) - before >= _BUSY_BYTES:
                    poller.register(self.sock.fileno(), select.POLLIN)
                    busy = True
                elif busy and not events:
                    poller.unregister(self.sock.fileno())
                    busy = False
        finally:
            os.close(pidfd)

    def _drain(self) -> bool:
        """Read what is there without blocking; True at the end of the stream."""
        while True:
            try:
                chunk = self.sock.recv(1 << 16)
            except (BlockingIOError, InterruptedError):
                return False
            except OSError:
                return True
            if not chunk:
                return True
            self.buffer += chunk
            if len(self.buffer) > _MAX_REPLY + 4:
                return False

    def ask(self, req: dict[str, Any], budget: _Budget) -> Any:
        budget = budget.capped(1)  # (one call of a test that runs in the grader)
        self.send(req, budget)
        return self.receive(budget)

    def end(self, why: str) -> None:
        """Kill and reap the process (once); ``why`` it ended."""
        _without_alarm(self._end, why)

    def _end(self, why: str) -> None:
        if self.gone is None:
            self.gone = why
        if self.status is not None:
            return
        try:
            self.sock.close()
        except Exception:
            pass
        self.status = self.spawner.reap(self.pid)
        if why == "eof" and os.WIFSIGNALED(self.status):
            self.gone = "its process died of signal %d" % os.WTERMSIG(self.status)


def _without_alarm(call: Any, *args: Any) -> Any:
    """``call(*args)`` with the interval timer's ``_Abort`` held back until
    it returns, then raised (dropped if the call raised: its exception ends
    the check as well).

    The timer of a test that runs in the grader raises ``_Abort`` wherever
    it lands. Landing between a request to the spawner and its answer, it
    would leave that answer unread: the next request would read it instead
    of its own, and whoever made that request (the next candidate of the
    pack, a sibling) would take the spawner for gone and score 0.0. A
    candidate can time that landing (it decides when its process ends, and
    how long reaping what it leaves takes), so no exchange with the spawner
    is ever cut in two. (Held in the handler, not by a signal mask: the
    signal may go to another thread of the grader, one a test started, and
    its handler still runs here.)"""
    held = _ALARM_HELD
    held["depth"] += 1
    try:
        result = call(*args)
    except BaseException:
        held["depth"] -= 1
        if not held["depth"]:
            held["pending"] = False
        raise
    held["depth"] -= 1
    if not held["depth"] and held["pending"]:
        held["pending"] = False
        raise _Abort()
    return result


def _is_stopped(pid: int) -> bool:
    """Whether ``pid`` is stopped (or stopped by a tracer), as its ``stat``
    says (readable, undumpable as a candidate's process is)."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as fh:
            return fh.read().rpartition(b")")[2].split()[:1] in ([b"T"], [b"t"])
    except OSError:
        return False


def _failure_of(why: str) -> tuple[str, str]:
    """(reason, message) counted for a check the process never answered."""
    if why == "timeout":
        return "timeout", "the exec budget ran out"
    if why == "stopped":
        return "timeout", "the candidate's process was stopped, and never answered"
    if why == "eof":
        return "error", "the candidate's process ended before this check"
    return "error", "the candidate's process " + why
