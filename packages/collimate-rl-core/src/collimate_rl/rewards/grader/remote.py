"""The grader's side of the candidate's process: start the clean spawner,
fork a candidate's process, ask it things, and stand in for what it holds.

The candidate runs in a process forked from a fresh interpreter
(:mod:`.worker`), never from the grader: the grader's memory (the sealed
tests, expected outputs, references, the verdict's fd) was never copied into
it. Tests that are code (asserts, ``check``, pytest functions) run here, in
the grader; every call of the candidate's code crosses to its process
(:class:`_Remote` stands in for functions, classes and objects it made).
Only plain builtin data crosses back, so an object that equals anything,
lies about its class or subclasses a builtin never reaches a comparison:
it stays in the candidate's process, and a comparison of it with a plain
value is False.
"""

# The guest may run Python 3.8 with nothing imported beyond its preload:
# no zip(strict=), no contextlib, and %-formatting is as good as any.
# ruff: noqa: UP031, SIM105, B905
from __future__ import annotations

import marshal
import os
import sys

from .budget import _Budget

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - typing only, never imported in the guest
    from typing import Any

_SPAWNER_ANSWER_S = 10.0  # a spawner silent this long is taken for gone
_MAX_REPLY = 1 << 24  # what one answer of the candidate's process may weigh
_FD_SIZE = 4
_TWIN_ENV = "COLLIMATE_CLEAN_TWIN"
_MAX_RESTARTS = 8  # fresh processes for one candidate's interactive tests
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
# backend's clean twin too, ``local_backend/engine/guest/twin.py``): on fd 3,
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
    ``_WORKER_SOURCE``; read from the file next to this one otherwise."""
    text = globals().get("_WORKER_SOURCE")
    if text:
        return str(text)
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")) as fh:
        return fh.read() + '\nif __name__ != "__collimate_preload__":\n    _worker_main()\n'


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
        try:
            self.sock.close()
        except Exception:
            pass
        try:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
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
                self.end("timeout")
                raise _Gone("timeout")
            try:
                self.sock.settimeout(left + 0.05)
                chunk = self.sock.recv(1 << 16)
            except OSError:  # (a timeout is one)
                self.end("timeout")
                raise _Gone("timeout") from None
            if not chunk:
                self.end("eof")
                raise _Gone("eof")
            self.buffer += chunk

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
        self.send(req, budget)
        return self.receive(budget)

    def end(self, why: str) -> None:
        """Kill and reap the process (once); ``why`` it ended."""
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


def _failure_of(why: str) -> tuple[str, str]:
    """(reason, message) counted for a check the process never answered."""
    if why == "timeout":
        return "timeout", "the exec budget ran out"
    if why == "eof":
        return "error", "the candidate's process ended before this check"
    return "error", "the candidate's process " + why


# ---------------------------------------------------------------------------
# Stand-ins for the candidate's objects (tests that are code run here)
# ---------------------------------------------------------------------------


class _Session:
    """A candidate loaded as a module, for tests that run in the grader. A
    process that dies or times out is replaced (its module loaded again) for
    the next call, a few times at most: one crash costs the check it
    happened in, not every check after it."""

    def __init__(
        self, fork: Any, budget: _Budget, module: str, path: str, aliases: list[str]
    ) -> None:
        self.fork = fork
        self.budget = budget
        self.load_req = {"do": "load", "module": module, "path": path, "aliases": aliases}
        self.conn: _Conn | None = None
        self.restarts = 0
        self.exports: dict[str, Any] = {}
        self.exc_classes: dict[int, type] = {}
        self.load_error: str | None = None
        #: calls and operations sent to the candidate's process so far: test
        #: code that fails after one of them may have been failed by it
        self.calls = 0

    def start(self) -> bool:
        """Fork and load; False (``load_error`` says why) when it cannot."""
        self.conn = self.fork()
        try:
            reply = self.conn.ask(dict(self.load_req), self.budget)
        except _Gone as gone:
            self.load_error = "%s while loading the candidate: %s" % _failure_of(gone.why)
            return False
        if reply[0] != "loaded":
            self.load_error = str(reply[1])
            return False
        self.exports = {name: self.value(enc) for name, enc in reply[1].items()}
        return True

    def live(self) -> _Conn:
        conn = self.conn
        if conn is not None and conn.gone is None:
            return conn
        if self.restarts >= _MAX_RESTARTS or self.budget.left() <= 0:
            raise CandidateError("the candidate's process is gone")
        self.restarts += 1
        if conn is not None:
            conn.end("replaced")
        if not self.start():
            raise CandidateError(self.load_error or "the candidate no longer loads")
        return self.conn  # type: ignore[return-value]

    def close(self) -> None:
        if self.conn is not None:
            self.conn.end("done")

    # -- values ------------------------------------------------------------
    def value(self, enc: Any) -> Any:
        if enc[0] == "v":
            return enc[1]
        if enc[0] == "m":  # a module the candidate imported: the grader's own, if loaded
            return sys.modules.get(enc[1])
        _tag, key, type_name, is_callable, bases = enc
        if bases:
            return self.exception_class(key, type_name, bases)
        return _Remote(self, key, type_name, is_callable)

    def exception_class(self, key: int, name: str, bases: Any) -> type:
        """A local exception class standing in for one the candidate
        defined, deriving from the same builtin exception (so that
        ``pytest.raises(ValueError)`` and ``except MyError`` both work)."""
        cls = self.exc_classes.get(key)
        if cls is None:
            import builtins

            base: Any = Exception
            for base_name in bases:
                found = getattr(builtins, base_name, None)
                if isinstance(found, type) and issubclass(found, Exception):
                    base = found
                    break
            cls = type(str(name), (base,), {"__module__": "solution"})
            self.exc_classes[key] = cls
        return cls

    def encode(self, value: Any, depth: int = 0) -> Any:
        """An argument as it crosses (see ``worker._Candidate.into``)."""
        kind = type(value)
        if isinstance(value, _Remote):
            if object.__getattribute__(value, "_session") is not self:
                raise CandidateError("an object of another candidate")
            return ("h", object.__getattribute__(value, "_key"))
        if depth > 100:
            raise CandidateError("an argument nested too deep to cross")
        if kind is list:
            return ("l", [self.encode(v, depth + 1) for v in value])
        if kind is tuple:
            return ("t", [self.encode(v, depth + 1) for v in value])
        if kind is set or kind is frozenset:
            return ("s", [self.encode(v, depth + 1) for v in value])
        if kind is dict:
            return (
                "d",
                [(self.encode(k, depth + 1), self.encode(v, depth + 1)) for k, v in value.items()],
            )
        if kind in (type(None), bool, int, float, complex, str, bytes):
            return ("v", value)
        raise CandidateError(
            "an argument of type %s cannot cross to the candidate's process "
            "(only plain data and the candidate's own objects can)" % kind.__name__
        )

    def answer(self, reply: Any, args: Any = ()) -> Any:
        tag = reply[0]
        if tag == "ok":
            after = reply[2]
            for given, back in zip(args, after):
                if back is not None and back[0] == "v":
                    _sync(given, back[1])
            return self.value(reply[1])
        if tag == "raised":
            _tag, name, bases, key, message = reply
            import builtins

            if not key:
                cls = getattr(builtins, name, None)
                if isinstance(cls, type) and issubclass(cls, Exception):
                    raise cls(message)
                raise CandidateError("the candidate raised %s: %s" % (name, message))
            raise self.exception_class(key, name, bases)(message)
        raise CandidateError("%s: %s" % (tag, reply[1]))

    def visible(self) -> dict[str, Any]:
        """The names test code may see from the candidate's code: not one
        that shadows a builtin (or ``pytest``), or a candidate defining
        ``set`` or ``sorted`` would answer for both sides of a test's
        comparison."""
        import builtins

        return {
            name: value
            for name, value in self.exports.items()
            if value is not None and name != "pytest" and not hasattr(builtins, name)
        }

    def call(self, target: Any, args: Any, kwargs: Any) -> Any:
        self.calls += 1
        conn = self.live()
        req = {
            "do": "call",
            "target": target,
            "args": [self.encode(a) for a in args],
            "kwargs": [(str(k), self.encode(v)) for k, v in kwargs.items()],
        }
        try:
            reply = conn.ask(req, self.budget)
        except _Gone as gone:
            raise CandidateError(_failure_of(gone.why)[1]) from None
        return self.answer(reply, args)

    def op(self, key: int, what: str, *args: Any) -> Any:
        self.calls += 1
        conn = self.live()
        req = {"do": "op", "handle": key, "op": what, "args": [self.encode(a) for a in args]}
        try:
            reply = conn.ask(req, self.budget)
        except _Gone as gone:
            raise CandidateError(_failure_of(gone.why)[1]) from None
        return self.answer(reply)


def _sync(given: Any, back: Any) -> None:
    """Make ``given`` (an argument the test passed) look as the candidate's
    call left it, in place: lists, dicts, sets and bytearrays."""
    try:
        if type(given) is list and type(back) is list:
            if len(given) == len(back):
                for i, (g, b) in enumerate(zip(given, back)):
                    if type(g) in (list, dict, set) and type(g) is type(b):
                        _sync(g, b)
                    else:
                        given[i] = b
            else:
                given[:] = back
        elif (type(given) is dict and type(back) is dict) or (
            type(given) is set and type(back) in (set, frozenset)
        ):
            given.clear()
            given.update(back)
    except Exception:
        pass


def _exact(value: Any, kind: type, what: str) -> Any:
    if type(value) is not kind:
        raise TypeError("%s returned %s, not %s" % (what, type(value).__name__, kind.__name__))
    return value


class _Remote:
    """Stands in for an object of the candidate's process (a function, a
    class, an instance, an iterator). Calls, attributes, items and
    iteration cross to that process; equality with anything but another of
    its objects is False, whatever its ``__eq__`` would say."""

    __slots__ = ("__weakref__", "_callable", "_key", "_session", "_type")

    def __init__(self, session: _Session, key: int, type_name: str, is_callable: bool) -> None:
        object.__setattr__(self, "_session", session)
        object.__setattr__(self, "_key", key)
        object.__setattr__(self, "_type", type_name)
        object.__setattr__(self, "_callable", is_callable)

    def _op(self, what: str, *args: Any) -> Any:
        session = object.__getattribute__(self, "_session")
        return session.op(object.__getattribute__(self, "_key"), what, *args)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        session = object.__getattribute__(self, "_session")
        return session.call(("handle", object.__getattribute__(self, "_key")), args, kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._op("getattr", name)

    def __setattr__(self, name: str, value: Any) -> None:
        self._op("setattr", name, value)

    def __getitem__(self, key: Any) -> Any:
        return self._op("getitem", key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._op("setitem", key, value)

    def __iter__(self) -> Any:
        it = self._op("iter")
        if isinstance(it, _Remote):
            return _RemoteIterator(it)
        return iter(it)

    def __next__(self) -> Any:
        return self._op("next")

    def __len__(self) -> int:
        return int(_exact(self._op("len"), int, "__len__"))

    def __contains__(self, item: Any) -> bool:
        return bool(_exact(self._op("contains", item), bool, "__contains__"))

    def __bool__(self) -> bool:
        return bool(_exact(self._op("bool"), bool, "__bool__"))

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        if not isinstance(other, _Remote):
            return False  # a plain value never equals an object of the candidate's
        return self._op("eq", other) is True

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, _Remote):
            return NotImplemented
        return self._op("lt", other) is True

    def __hash__(self) -> int:
        return int(_exact(self._op("hash"), int, "__hash__"))

    def __repr__(self) -> str:
        try:
            return str(_exact(self._op("repr"), str, "__repr__"))
        except Exception:
            return "<candidate %s>" % object.__getattribute__(self, "_type")

    def __str__(self) -> str:
        return str(_exact(self._op("str"), str, "__str__"))

    def __instancecheck__(self, obj: Any) -> bool:
        if not isinstance(obj, _Remote):
            return False
        return self._op("isinstance", obj) is True


class _RemoteIterator:
    __slots__ = ("_it",)

    def __init__(self, it: _Remote) -> None:
        self._it = it

    def __iter__(self) -> _RemoteIterator:
        return self

    def __next__(self) -> Any:
        return self._it._op("next")
