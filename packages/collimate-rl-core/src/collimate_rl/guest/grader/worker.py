"""The candidate's side: a fresh interpreter that never held the tests.

The grader starts this module's source with ``python -S -I -c`` (see
``remote._start_worker``): a new address space, not a fork of the grader, so
nothing that decides a reward (expected outputs, a reference solution, test
source, the verdict's fd) was ever in the memory a candidate can read. It
runs as the **spawner**: on the grader's word it forks one process per
candidate (``f``), kills and reaps it (``w``); it never holds a candidate's
code (each process gets its own from the grader).
Each candidate's process answers the grader's requests on a socket of its
own (``_serve``): load the module, call functions (a batch, or one at a time
for tests that run in the grader), operate on objects it returned (handles),
run the program on an input. Only plain builtin data crosses: anything else
stays here and the grader gets a handle to it.

Messages on every socket are a 4-byte big-endian length and a marshal dump.
It is shipped on its own, with :mod:`..separation` and :mod:`.spawning`
only (``WORKER_PARTS``).
"""

# The guest may run Python 3.8 with nothing imported beyond its preload:
# no zip(strict=), no contextlib, and %-formatting is as good as any.
# ruff: noqa: UP031, SIM105
from __future__ import annotations

import marshal
import os
import sys
from time import monotonic as _w_monotonic
from time import sleep as _w_sleep

from ..separation import _w_separator
from .spawning import _w_raw_fork, _WSeeds

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - typing only, never imported in the guest
    from typing import Any, NoReturn

_W_MSG = 160
_W_REPR = 1 << 12
_W_FD = 4  # a file descriptor in SCM_RIGHTS data: a C int
_W_BAD_SEED = object()  # a seed ``_WSeeds`` cannot read: its candidate's process ends at once
_W_CHILDREN = ""  # the spawner's /proc children list (set by ``_w_subreaper``)
# (bound once: a candidate's process looks up nothing per call; ``_signal``,
# not ``signal``: its enums cost a fresh interpreter ~5 ms)
_w_signal = __import__("_signal")
_w_setitimer = _w_signal.setitimer
_W_ITIMER_REAL = _w_signal.ITIMER_REAL


class _WAbort(BaseException):
    """Raised by the interval timer: this call ran out of time."""


def _w_alarm(signum: int, frame: object) -> None:
    raise _WAbort()


def _w_send(sock: Any, obj: Any) -> None:
    data = marshal.dumps(obj)
    sock.sendall(len(data).to_bytes(4, "big") + data)


def _w_recv_exact(sock: Any, size: int) -> bytes:
    chunks = []
    while size:
        chunk = sock.recv(min(size, 1 << 20))
        if not chunk:
            raise EOFError()
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _w_recv(sock: Any) -> Any:
    size = int.from_bytes(_w_recv_exact(sock, 4), "big")
    return marshal.loads(_w_recv_exact(sock, size))


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


class _Candidate:
    """The candidate's process: its module, the objects it handed out."""

    def __init__(self, conn: Any, code: Any) -> None:
        self.conn = conn
        self.code = code
        self.module: Any = None
        self.handles: dict[int, Any] = {}
        self.deadline_left = 0.0
        self.per_check: float | None = None

    # -- time ---------------------------------------------------------------
    def run(self, fn: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
        """``("ok", value)`` or ``(reason, message)``, under the time left."""
        left = self.deadline_left - _w_monotonic()
        if self.per_check is not None:
            left = min(left, self.per_check)
        if left <= 0:
            return "timeout", "no time left in the exec budget"
        try:
            _w_setitimer(_W_ITIMER_REAL, left)
            try:
                value = fn(*args, **kwargs)
            finally:
                _w_setitimer(_W_ITIMER_REAL, 0)
        except _WAbort:
            return "timeout", "exceeded %.3gs" % left
        except MemoryError:
            return "memory_error", "MemoryError"
        except BaseException as exc:
            if type(exc) is SystemExit and exc.code in (None, 0):
                return "ok", None
            return "raised", exc
        return "ok", value

    # -- values -------------------------------------------------------------
    def out(self, value: Any) -> Any:
        """``value`` as it crosses: ``("v", plain)`` or ``("h", id, type, callable, exc_class)``."""
        value = _w_plain(value)
        try:
            if _w_is_plain(value):
                marshal.dumps(value)
                return ("v", value)
        except Exception:
            pass
        key = id(value)
        self.handles[key] = value
        is_exc_class = isinstance(value, type) and issubclass(value, BaseException)
        bases = _w_builtin_bases(value) if is_exc_class else ()
        return ("h", key, _w_type_name(value), callable(value), bases)

    def into(self, enc: Any) -> Any:
        """An argument as the grader encoded it (see ``remote._encode``)."""
        tag = enc[0]
        if tag == "v":
            return enc[1]
        if tag == "h":
            return self.handles[enc[1]]
        if tag == "l":
            return [self.into(e) for e in enc[1]]
        if tag == "t":
            return tuple(self.into(e) for e in enc[1])
        if tag == "s":
            return set(self.into(e) for e in enc[1])
        if tag == "d":
            return dict((self.into(k), self.into(v)) for k, v in enc[1])
        raise ValueError("unknown encoding %r" % (tag,))

    def raised(self, exc: BaseException) -> Any:
        cls = type(exc)
        return (
            "raised",
            _w_type_name(cls),
            _w_builtin_bases(cls),
            self.out(cls)[1] if cls.__module__ != "builtins" else 0,
            _w_text(exc),
        )

    # -- requests -----------------------------------------------------------
    def load(self, req: dict[str, Any]) -> Any:
        module = type(sys)(req["module"])
        module.__file__ = req["path"]
        for name in req["aliases"]:
            sys.modules[name] = module

        def load() -> None:
            code = self.code
            if isinstance(code, (bytes, str)):
                code = compile(code, req["path"], "exec", dont_inherit=True)
            exec(code, module.__dict__)

        reason, value = self.run(load)
        if reason == "raised":
            reason, value = _w_fault(value)
        if reason != "ok":
            return ("load", "%s while loading the candidate: %s" % (reason, value))
        self.module = module
        names = {}
        for name, value in list(module.__dict__.items()):
            if name.startswith("__"):
                continue
            if type(value) is type(sys):
                names[name] = ("m", str(getattr(value, "__name__", "")))
                continue
            names[name] = self.out(value)
        return ("loaded", names)

    def resolve(self, name: str) -> Any:
        """A module-level function, else a method of a LeetCode ``Solution``
        (a fresh instance per call, as the judges make one per test)."""
        module = self.module
        fn = getattr(module, name, None)
        if callable(fn) and not isinstance(fn, type):
            return fn
        cls = getattr(module, "Solution", None)
        if isinstance(cls, type) and callable(getattr(cls, name, None)):

            def call(*args: Any, **kwargs: Any) -> Any:
                return getattr(cls(), name)(*args, **kwargs)

            return call
        if callable(fn):
            return fn
        return None

    def batch(self, req: dict[str, Any]) -> None:
        """Run every call, one record each as soon as it is known."""
        fn = self.resolve(req["entry"])
        if fn is None:
            _w_send(self.conn, ("load", "the candidate defines no function %r" % req["entry"]))
            return
        for index, (args, kwargs) in enumerate(req["calls"]):
            reason, value = self.run(fn, *args, **kwargs)
            if reason == "raised":
                reason, value = _w_fault(value)
            if reason == "ok":
                value = _w_plain(value)
                try:
                    if not _w_is_plain(value):
                        raise ValueError()
                    record = marshal.dumps((index, "ok", value))
                except Exception:
                    record = marshal.dumps((index, "unplain", _w_repr(value)))
            else:
                record = marshal.dumps((index, reason, str(value)[:_W_MSG]))
            self.conn.sendall(len(record).to_bytes(4, "big") + record)

    def call(self, req: dict[str, Any]) -> Any:
        """One call of a test running in the grader; the arguments come
        back too, as the call left them (a test may check a list the
        candidate sorted in place)."""
        target = req["target"]
        if target[0] == "name":
            fn = self.resolve(target[1])
            if fn is None:
                return ("error", "the candidate defines no function %r" % target[1])
        else:
            fn = self.handles.get(target[1])
        args = [self.into(a) for a in req["args"]]
        kwargs = dict((k, self.into(v)) for k, v in req["kwargs"])
        reason, value = self.run(fn, *args, **kwargs)
        if reason == "raised":
            return self.raised(value)
        if reason != "ok":
            return (reason, str(value)[:_W_MSG])
        after = []
        for a in args:
            try:
                after.append(self.out(a) if _w_is_plain(a) else None)
            except Exception:
                after.append(None)
        return ("ok", self.out(value), after)

    def op(self, req: dict[str, Any]) -> Any:
        """An operation on a handle: attribute, item, iteration, length,
        comparison with another handle, text, truth."""
        obj: Any = self.handles.get(req["handle"])
        what = req["op"]
        args = [self.into(a) for a in req["args"]]
        table = {
            "getattr": lambda: getattr(obj, args[0]),
            "setattr": lambda: setattr(obj, args[0], args[1]),
            "getitem": lambda: obj[args[0]],
            "setitem": lambda: obj.__setitem__(args[0], args[1]),
            "iter": lambda: iter(obj),
            "next": lambda: next(obj),
            "len": lambda: len(obj),
            "contains": lambda: args[0] in obj,
            "eq": lambda: obj == args[0],
            "lt": lambda: obj < args[0],
            "repr": lambda: repr(obj),
            "str": lambda: str(obj),
            "bool": lambda: bool(obj),
            "hash": lambda: hash(obj),
            "isinstance": lambda: isinstance(args[0], obj),
        }
        action = table.get(what)
        if action is None:
            return ("error", "unknown operation %r" % what)
        reason, value = self.run(action)
        if reason == "raised":
            return self.raised(value)
        if reason != "ok":
            return (reason, str(value)[:_W_MSG])
        return ("ok", self.out(value), [])

    def program(self, req: dict[str, Any]) -> None:
        """Run the candidate as a program on each input (stdin/stdout tests)."""
        code = self.code
        reason = "ok"
        if isinstance(code, (bytes, str)):
            reason, code = self.run(compile, code, req["path"], "exec", dont_inherit=True)
        if reason == "raised":
            reason, code = _w_fault(code)
        if reason != "ok":
            _w_send(self.conn, ("load", "%s while compiling the candidate: %s" % (reason, code)))
            return
        for index, given in enumerate(req["inputs"]):
            reason, text = _w_run_program(self, req["path"], code, given)
            record = marshal.dumps((index, reason, text))
            self.conn.sendall(len(record).to_bytes(4, "big") + record)


def _serve(conn: Any) -> NoReturn:
    """A candidate's process: answer the grader until it hangs up. Its code
    comes first, straight from the grader: the spawner never holds any
    candidate's code, so no candidate of a pack can find another's."""
    cand = _Candidate(conn, None)
    try:
        while True:
            req = _w_recv(conn)
            cand.deadline_left = _w_monotonic() + float(req.get("left", 0.0))
            cand.per_check = req.get("per_check")
            what = req["do"]
            if what == "code":
                cand.code = req["code"]
            elif what == "load":
                _w_send(conn, cand.load(req))
            elif what == "batch":
                cand.batch(req)
                _w_send(conn, ("done",))
            elif what == "program":
                cand.program(req)
                _w_send(conn, ("done",))
            elif what == "call":
                _w_send(conn, cand.call(req))
            elif what == "op":
                _w_send(conn, cand.op(req))
            elif what == "drop":
                cand.handles.pop(req["handle"], None)
            else:
                break
            if req.get("last"):  # the grader reads everything once this process is gone
                break
    except BaseException:
        pass
    os._exit(0)


def _w_fault(exc: BaseException) -> tuple[str, str]:
    """(reason, message) of an exception the candidate's code raised; a
    standard library module that cannot be imported because the guest
    cannot read its standard library is the guest's fault (the grader
    checks that claim before believing it)."""
    if type(exc) is ModuleNotFoundError:
        names = getattr(sys, "stdlib_module_names", ())
        name = (getattr(exc, "name", None) or "").split(".")[0]
        stdlib = os.path.dirname(os.__file__)
        if name and name in names and not os.access(stdlib, os.R_OK | os.X_OK):
            return "environment", "the guest cannot import the standard library module %r" % name
    return "error", (_w_type_name(type(exc)) + ": " + _w_text(exc))[:_W_MSG]


def _w_text(exc: BaseException) -> str:
    try:
        return str(exc)[:_W_MSG]
    except BaseException:
        return "<unprintable>"


def _w_type_name(value: Any) -> str:
    cls = value if isinstance(value, type) else type(value)
    try:
        return str(type.__getattribute__(cls, "__name__"))[:80]
    except BaseException:
        return "object"


def _w_builtin_bases(cls: Any) -> tuple[str, ...]:
    """The builtin exception classes ``cls`` derives from, nearest first
    (read from the real MRO, not from anything the class says of itself)."""
    try:
        mro: Any = type.__getattribute__(cls, "__mro__")
    except BaseException:
        return ()
    import builtins

    out = []
    base: Any
    for base in mro:
        name = type.__getattribute__(base, "__name__")
        found = getattr(builtins, name, None)
        if found is base and isinstance(found, type) and issubclass(found, BaseException):
            out.append(name)
    return tuple(out)


_W_PLAIN = (type(None), bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset)


def _w_is_plain(value: Any, depth: int = 0) -> bool:
    """Exact builtin types all the way down (a subclass of int is not an int)."""
    kind = type(value)
    if kind not in _W_PLAIN or depth > 100:
        return False
    if kind in (list, tuple, set, frozenset):
        return all(_w_is_plain(v, depth + 1) for v in value)
    if kind is dict:
        return all(
            _w_is_plain(k, depth + 1) and _w_is_plain(v, depth + 1) for k, v in value.items()
        )
    return True


def _w_plain(value: Any) -> Any:
    """numpy scalars and arrays as builtins (the candidate's own answer,
    whichever way it spells it)."""
    try:
        mod = type(value).__module__
        if mod == "numpy" or mod.startswith("numpy."):
            if hasattr(value, "tolist"):
                return value.tolist()
            if hasattr(value, "item"):
                return value.item()
    except BaseException:
        pass
    return value


def _w_repr(value: Any) -> str:
    try:
        return repr(value)[:_W_REPR]
    except BaseException:
        return "<%s>" % _w_type_name(value)


def _w_scratch(path: str, content: bytes) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    os.unlink(path)
    view = memoryview(content)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, 0)
    return fd


def _w_run_program(cand: _Candidate, path: str, code: Any, given: str) -> tuple[str, str]:
    """One run of the compiled program with fds 0 and 1 on real files (so
    ``input()``, ``sys.stdin.buffer``, ``open(0)`` and ``os.write(1, ...)``
    behave as under a judge): (reason, its output or why it failed)."""
    real_in, real_out = sys.stdin, sys.stdout
    null = os.open(os.devnull, os.O_RDWR)
    fd_in = _w_scratch(path + ".stdin", given.encode("utf-8"))
    fd_out = _w_scratch(path + ".stdout", b"")
    os.dup2(fd_in, 0)
    os.dup2(fd_out, 1)
    os.close(fd_in)
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    opened = sys.stdout
    namespace = {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__}
    try:
        reason, message = cand.run(exec, code, namespace)
        if reason == "raised":
            reason, message = _w_fault(message)
        for stream in (sys.stdout, opened):
            try:
                stream.flush()
            except BaseException:
                pass
    finally:
        sys.stdin, sys.stdout = real_in, real_out
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.close(null)
    os.lseek(fd_out, 0, 0)
    chunks = []
    while True:
        chunk = os.read(fd_out, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd_out)
    if reason != "ok":
        return reason, str(message)
    return "ok", b"".join(chunks).decode("utf-8", "replace")
