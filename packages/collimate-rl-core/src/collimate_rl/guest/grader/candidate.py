"""A candidate's process: it serves the grader the candidate's code.

Forked by the spawner (:mod:`.spawner`) for one candidate, it answers the
grader's requests on a socket of its own (``_serve``): take the code, load
the module, call functions (a batch, or one at a time for tests that run in
the grader), operate on objects it returned (handles), run the program on
an input, each call under the time left (``_Candidate.run``). Only plain
builtin data crosses: anything else stays here and the grader gets a handle
to it. Messages are a 4-byte big-endian length and a marshal dump.
"""

# The guest may run Python 3.8 with nothing imported beyond its preload:
# no zip(strict=), no contextlib, and %-formatting is as good as any.
# ruff: noqa: UP031, SIM105
from __future__ import annotations

import marshal
import os
import sys
from time import monotonic as _w_monotonic

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - typing only, never imported in the guest
    from typing import Any, NoReturn

_W_MSG = 160
_W_REPR = 1 << 12
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
