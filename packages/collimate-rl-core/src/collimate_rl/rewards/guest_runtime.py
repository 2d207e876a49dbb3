"""The grader that runs INSIDE the guest (its source is shipped as exec ``code``).

:mod:`.program` reads this module's source text, appends ``main(<config
literal>)`` and sends the result as the exec's ``code``; the SDK imports it
only to share :func:`checksum` (importing it has no side effects). It is a
real module so that it is linted, type-checked and unit-tested like
everything else. Constraints that follow from where it
runs:

* stdlib only, Python >= 3.8 syntax, and only modules a warm interpreter
  has already imported (``os``, ``sys``, ``time``, ``signal``, ``io``,
  ``random``, ``math``): a fork pays for every import, and a locked-down
  guest may not be able to import anything else at all. Annotations and the
  ``__future__`` import are stripped before shipping (:mod:`.program`);
* no ``json`` import in the guest: the config arrives as a Python literal,
  and the verdict leaves as JSON written by :func:`to_json`.

Why it looks the way it does:

* **The verdict is framed, not "the last line".** The guest merges stderr
  into stdout, so anything printed after a bare reward line (a warning, an
  atexit hook) would turn a pass into 0.0. The grader writes
  ``<MARKER><nonce> <verdict>`` on a duplicate of the original stdout and then
  leaves with ``os._exit`` (no atexit, no interpreter-shutdown noise). While
  the candidate runs, fds 0/1/2 point at ``/dev/null``: its prints can neither
  fill the 16 MiB output cap before the verdict nor forge a frame line.
* **The candidate runs in a process of its own** (``_in_own_process``),
  forked without the verdict's fd, and sends the grader each check's raw
  result; the grader compares. Code that walks the stack or the heap for
  the grader's frame, its nonce or its fd finds nothing it can write a
  verdict with, and ``os._exit`` or a crash costs only the checks not yet
  reported. (It can still read the tests in its memory: the answers are
  not secret, the verdict is.)
* **A "hello" frame is written before the candidate is even read.** No hello
  means the grader never ran (wrong interpreter, broken guest): an
  infrastructure failure, not the candidate's. Hello without a verdict means
  the candidate killed the grader (a signal to its parent): its failure.
* **Delivery is verified.** The candidate arrives as a text ``files`` entry;
  its size and a polynomial checksum (:func:`checksum`, no import needed)
  are checked before it runs, so a mangled delivery is
  reported as such instead of being scored.
* **Time is budgeted per check.** Each test runs under an interval timer
  bounded by the exec's deadline (minus a margin), so one looping test costs
  that test only and the verdict still arrives with partial credit.
* **Property inputs come from a private RNG** copied from the seeded global
  ``random`` state at start: identical draws to a plain seeded grader, but a
  candidate that consumes or reseeds ``random`` cannot shift its own inputs,
  so common random numbers hold across a whole group.
* **Comparison is strict about types.** A candidate result must be a plain
  builtin value (or a numpy scalar/array, converted) when the expected value
  is one, so an object whose ``__eq__`` always returns True scores nothing.
"""

# The guest may run Python 3.8 with nothing imported beyond its preload:
# no zip(strict=), no contextlib, and %-formatting is as good as any.
# ruff: noqa: UP031, B905, SIM105, SIM102
from __future__ import annotations

import os
import signal
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - typing only, never imported in the guest
    from collections.abc import Callable
    from typing import Any, NoReturn

_PLAIN = (type(None), bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset)
_MAX_FAILURES = 10
_MSG = 160
_MAX_RECORD = 1 << 24  # what the candidate's process may send in all, at most
_REPR_MAX = 1 << 16  # the repr of a result that is not plain data, at most
_PEEK_S = 0.05  # how often a sleeping grader looks at the candidate's pipe
_BUSY_BYTES = 1 << 14  # found at one look: the grader reads as it comes


_CHECKSUM_MOD = (1 << 61) - 1


def checksum(data: bytes) -> int:
    """The bytes as one little-endian integer, mod the Mersenne prime 2^61-1:
    computed in C, and any changed, lost or added byte changes it (with the
    size check) except with negligible probability."""
    return int.from_bytes(data, "little") % _CHECKSUM_MOD


class _Abort(BaseException):
    """Raised by the interval timer: the current check ran out of time."""


def _on_alarm(signum: int, frame: object) -> None:
    raise _Abort()


def _plain(value: Any) -> Any:
    """numpy scalars/arrays -> builtins (checked by module name: no import)."""
    mod = type(value).__module__
    if mod == "numpy" or mod.startswith("numpy."):
        if hasattr(value, "tolist"):
            return value.tolist()
        if hasattr(value, "item"):
            return value.item()
    return value


def _is_number(value: Any) -> bool:
    return type(value) in (int, float)


def same(got: Any, want: Any, tol: float) -> bool:
    """``got`` equals the trusted ``want``: lists and tuples interchangeable,
    floats within ``tol`` (absolute or relative), exact builtin types only."""
    got = _plain(got)
    if type(want) not in _PLAIN:
        try:
            return bool(want == got)
        except Exception:
            return False
    if type(got) not in _PLAIN:
        return False
    if type(want) is float or type(got) is float:
        if not (_is_number(got) and _is_number(want)):
            return False
        if got == want:
            return True
        return bool(abs(got - want) <= tol * max(1.0, abs(want)))
    if isinstance(want, (list, tuple)):
        if not isinstance(got, (list, tuple)) or len(got) != len(want):
            return False
        return all(same(g, w, tol) for g, w in zip(got, want))
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(got) != set(want):
            return False
        return all(same(got[k], want[k], tol) for k in want)
    try:
        return bool(type(got) is type(want) and got == want) or (
            _is_number(got) and _is_number(want) and got == want
        )
    except Exception:
        return False


def same_tokens(got: str, want: str, tol: float | None) -> bool:
    """Whitespace-normalised comparison of program output (competitive
    programming style). An expected token written as a float (``.`` or an
    exponent) accepts an absolute or relative error up to ``tol``; integer and
    word tokens must match exactly."""
    g, w = got.split(), want.split()
    if len(g) != len(w):
        return False
    for a, b in zip(g, w):
        if a == b:
            continue
        if tol is None or not any(c in b for c in ".eE"):
            return False
        try:
            fa, fb = float(a), float(b)
        except ValueError:
            return False
        if not abs(fa - fb) <= tol * max(1.0, abs(fb)):
            return False
    return True


_JSON_ESCAPES = {i: "\\u%04x" % i for i in range(32)}
_JSON_ESCAPES.update({ord('"'): '\\"', ord("\\"): "\\\\"})


def to_json(value: Any) -> str:
    """JSON for the plain data of a verdict, without importing ``json``
    (the SDK reads it with ``json.loads``: fast, and thread-safe where
    ``ast`` is not). Anything unexpected is written as its ``repr``."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is int:
        return str(value)
    if type(value) is float:
        if value != value:
            return "NaN"
        if value in (float("inf"), float("-inf")):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    if isinstance(value, dict):
        return "{" + ",".join(to_json(str(k)) + ":" + to_json(v) for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(to_json(v) for v in value) + "]"
    text = value if isinstance(value, str) else repr(value)
    return '"' + text.translate(_JSON_ESCAPES) + '"'


def _verdict_json(verdict: dict[str, Any]) -> str:
    """``to_json``, by the ``json`` module when the warm interpreter already
    imported it (many times faster; the same data once read back)."""
    json = sys.modules.get("json")
    if json is not None:
        try:
            return str(json.dumps(verdict, separators=(",", ":"), default=repr))
        except Exception:  # keys json will not take: to_json makes them strings
            pass
    return to_json(verdict)


class _Frame:
    """Writes framed lines on a private duplicate of the original stdout."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.fd = os.dup(1)
        self._write = os.write
        self._exit = os._exit

    def line(self, text: str, marker: str | None = None) -> None:
        head = self.marker if marker is None else marker
        data = ("\n" + head + " " + text + "\n").encode("utf-8", "backslashreplace")
        while data:
            data = data[self._write(self.fd, data) :]

    def finish(self, verdict: dict[str, Any]) -> NoReturn:
        self.line(_verdict_json(verdict))
        self._exit(0)


def _mute() -> None:
    """Point fds 0/1/2 at /dev/null for everything the candidate does."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


class _Budget:
    """Per-check interval timers bounded by the exec's overall deadline."""

    def __init__(self, cfg: dict[str, Any], start: float) -> None:
        self.deadline = start + float(cfg["budget"])
        limit = cfg.get("test_timeout")
        self.per_check = float(limit) if limit else None
        self.private_fds: list[int] = []  # closed in the candidate's process
        signal.signal(signal.SIGALRM, _on_alarm)
        # captured before the candidate runs, so it cannot fake them
        self._access = os.access
        self._stdlib = os.path.dirname(os.__file__)
        self._stdlib_names = getattr(sys, "stdlib_module_names", None)

    def environment_fault(self, exc: BaseException) -> str | None:
        """Why ``exc`` is the guest's fault, not the candidate's: a standard
        library module that could not be imported because the guest cannot
        read its own standard library. (A module absent on this platform,
        ``msvcrt`` on Linux, stays the candidate's error.)"""
        if type(exc) is not ModuleNotFoundError or self._stdlib_names is None:
            return None
        name = (getattr(exc, "name", None) or "").split(".")[0]
        if not name or name not in self._stdlib_names:
            return None
        if self._access(self._stdlib, os.R_OK | os.X_OK):
            return None
        return "the guest cannot import the standard library module %r (%s is not readable)" % (
            name,
            self._stdlib,
        )

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def guest_is_broken(self) -> bool:
        """What ``environment_fault`` blames: a standard library this
        process cannot read."""
        return self._stdlib_names is not None and not self._access(self._stdlib, os.R_OK | os.X_OK)

    def run(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> tuple[str, Any]:
        """``("ok", value)`` or ``(reason, message)``; reason is one of
        ``timeout`` / ``memory_error`` / ``error``."""
        left = self.left()
        if self.per_check is not None:
            left = min(left, self.per_check)
        if left <= 0:
            return "timeout", "no time left in the exec budget"
        try:
            signal.setitimer(signal.ITIMER_REAL, left)
            try:
                value = fn(*args, **kwargs)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except _Abort:
            return "timeout", "exceeded %.3gs" % left
        except MemoryError:
            return "memory_error", "MemoryError"
        except BaseException as exc:  # the candidate's failure, whatever it is
            if type(exc) is SystemExit and exc.code in (None, 0):
                return "ok", None
            fault = self.environment_fault(exc)
            if fault is not None:
                return "environment", fault
            return "error", (type(exc).__name__ + ": " + str(exc))[:_MSG]
        return "ok", value


class _Tally:
    def __init__(self, total: int) -> None:
        self.total = total
        self.passed = 0
        self.failed: list[dict[str, Any]] = []
        self.failed_indices: list[int] = []
        self.reasons: set[str] = set()
        self.environment: str | None = None

    def add(self, index: int, reason: str | None, message: str = "") -> None:
        if reason is None:
            self.passed += 1
            return
        self.reasons.add(reason)
        self.failed_indices.append(index)
        if reason == "environment" and self.environment is None:
            self.environment = message
        if len(self.failed) < _MAX_FAILURES:
            self.failed.append({"index": index, "reason": reason, "message": message[:_MSG]})

    def verdict(self) -> dict[str, Any]:
        if self.environment is not None:
            return {"reward": 0.0, "environment_error": self.environment}
        return {
            "reward": (self.passed / self.total) if self.total else 0.0,
            "passed": self.passed,
            "total": self.total,
            "failed": self.failed,
            "failed_indices": self.failed_indices,
            "timeout": "timeout" in self.reasons,
            "memory_error": "memory_error" in self.reasons,
        }


class _Results:
    """What the candidate's process reported: ``load`` (why the module did
    not load, or None), ``checks`` (index -> (reason, value or message)),
    and for the checks it never reported, the reason and message to count."""

    def __init__(self) -> None:
        self.load: str | None = None
        self.checks: dict[int, tuple[str, Any]] = {}
        self.missing = ("error", "the candidate's process ended before this check")

    def get(self, index: int) -> tuple[str, Any]:
        return self.checks.get(index, self.missing)

    def vouch(self, budget: _Budget) -> None:
        """A broken guest is an infrastructure failure (the group skips the
        grade instead of scoring it 0), so the candidate's process claiming
        one is believed only if the grader sees the same broken guest."""
        if budget.guest_is_broken():
            return
        if self.load is not None and self.load.startswith("environment"):
            self.load = "error" + self.load[len("environment") :]
        for index, (reason, value) in list(self.checks.items()):
            if reason == "environment":
                self.checks[index] = ("error", value)


class _Outbox:
    """The candidate's process's side of the pipe: one length-prefixed
    marshal record per check, sent as soon as it is known, so a candidate
    that crashes or hangs later keeps what it already earned."""

    def __init__(self, fd: int) -> None:
        import marshal

        self.fd = fd
        self._dumps = marshal.dumps  # captured before the candidate runs
        self._write = os.write

    def put(self, record: Any) -> None:
        try:
            data = self._dumps(record)
        except (ValueError, TypeError, RecursionError):
            # not plain builtin data: it travels as its repr, marked ``unplain``
            index, _reason, value = record
            try:
                text = repr(value)[:_REPR_MAX]
            except Exception:
                text = "<%s>" % type(value).__name__
            data = self._dumps((index, "unplain", text))
        view = memoryview(len(data).to_bytes(4, "big") + data)
        while view:
            view = view[self._write(self.fd, view) :]


def _done_bytes() -> bytes:
    import marshal

    data = marshal.dumps(("done",))
    return len(data).to_bytes(4, "big") + data


_DONE_BYTES = _done_bytes()


def _in_own_process(work: Callable[[Callable[[Any], None]], None], budget: _Budget) -> _Results:
    """Run ``work`` (everything the candidate's code touches) in a forked
    process of its own, and collect what it reports.

    The candidate never shares a process with the grader: code that walks
    the stack or the heap finds no verdict channel to forge (its process
    closed it), and crashing, ``os._exit`` or a segfault cost it only the
    checks it had not reported yet. The grader compares what it is sent,
    and believes a claim of a broken guest only if it sees one too. The
    candidate cannot reach the grader's memory or fds where the grader is
    not dumpable (the local backend makes every exec child so: then
    ``/proc/<ppid>`` and ptrace are closed to the same uid).
    """
    import random

    state = random.getstate()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the candidate's process
        try:
            os.close(read_fd)
            for fd in budget.private_fds:
                os.close(fd)
            # random reseeds itself from the OS in a forked child: the
            # candidate gets the exec's seeded state, as it would unforked
            random.setstate(state)
        except BaseException:
            os._exit(0)
        _report(work, write_fd)
    os.close(write_fd)
    return _collect(read_fd, pid, budget, lambda: os.waitpid(pid, 0)[1])


def _report(work: Callable[[Callable[[Any], None]], None], fd: int) -> NoReturn:
    """The candidate's process: run ``work``, sending each record on ``fd``."""
    try:
        outbox = _Outbox(fd)
        work(outbox.put)
        outbox.put(("done",))
    except BaseException:
        pass
    os._exit(0)


def _collect(read_fd: int, pid: int, budget: _Budget, reap: Callable[[], int]) -> _Results:
    """What the candidate's process ``pid`` reports on ``read_fd``, within the
    budget; then it is killed, and ``reap`` returns its wait status."""
    results = _Results()
    inbox = _Inbox()
    try:
        ended = inbox.gather(read_fd, pid, budget)
    finally:
        os.close(read_fd)
        try:
            os.kill(pid, signal.SIGKILL)  # done or not: nothing of it runs on
        except OSError:
            pass
        status = reap()
    chunks = inbox.chunks
    try:
        _parse(results, b"".join(chunks))
    except Exception as exc:  # bytes marshal did not write, or cut short
        if ended in ("done", "eof"):
            ended = "garbage: %s" % exc
    if ended == "timeout":
        results.missing = ("timeout", "the exec budget ran out")
    elif ended == "flood":
        results.missing = ("error", "the candidate's process sent over %d bytes" % _MAX_RECORD)
    elif ended.startswith("garbage"):
        results.missing = ("error", "the candidate's process sent " + ended)
    elif ended == "eof" and os.WIFSIGNALED(status):
        results.missing = (
            "error",
            "the candidate's process died of signal %d" % os.WTERMSIG(status),
        )
    results.vouch(budget)
    return results


class _Inbox:
    """The grader's side of the candidate's pipe: bytes until the "done"
    record, the end, a flood or the budget, whichever comes first.

    Where the kernel offers a pidfd, the grader sleeps until the candidate's
    process exits instead of waking at every record, and reads once the
    process is gone, so it does next to nothing while the two share pages.
    It looks at the pipe every ``_PEEK_S``; when a look finds a big report
    flowing, it reads as it comes until a look finds the pipe quiet (a
    full pipe must not hold the writer back). Elsewhere it reads as the records come."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.size = 0
        self.tail = b""

    def take(self, chunk: bytes) -> str | None:
        self.chunks.append(chunk)
        self.size += len(chunk)
        self.tail = (self.tail + chunk)[-len(_DONE_BYTES) :]
        if self.tail == _DONE_BYTES:
            return "done"
        if self.size > _MAX_RECORD:
            return "flood"
        return None

    def gather(self, read_fd: int, pid: int, budget: _Budget) -> str:
        try:
            import select

            pidfd = os.pidfd_open(pid)  # type: ignore[attr-defined,unused-ignore]
        except Exception:  # an older kernel or Python
            return self.read_along(read_fd, budget)
        try:
            poller = select.poll()
            poller.register(pidfd, select.POLLIN)
            os.set_blocking(read_fd, False)
            busy = False  # the pipe watched too, while big reports flow
            while True:
                left = budget.left()
                if left <= 0:
                    return "timeout"
                events = poller.poll(min(left, _PEEK_S) * 1000.0)
                before = self.size
                ended = self.drain(read_fd)
                if ended is not None:
                    return ended
                if any(fd == pidfd for fd, _ in events):
                    return "eof"
                if not busy and self.size - before >= _BUSY_BYTES:
                    poller.register(read_fd, select.POLLIN)
                    busy = True
                elif busy and not events:  # a quiet look: back to sleep
                    poller.unregister(read_fd)
                    busy = False
        finally:
            os.close(pidfd)

    def drain(self, read_fd: int) -> str | None:
        while True:
            try:
                chunk = os.read(read_fd, 1 << 16)
            except BlockingIOError:
                return None
            if not chunk:
                return "eof"  # every holder of the pipe is gone
            ended = self.take(chunk)
            if ended is not None:
                return ended

    def read_along(self, read_fd: int, budget: _Budget) -> str:
        left = budget.left()
        try:
            if left <= 0:
                raise _Abort()
            signal.setitimer(signal.ITIMER_REAL, left)
            try:
                while True:
                    chunk = os.read(read_fd, 1 << 16)
                    if not chunk:
                        return "eof"
                    ended = self.take(chunk)
                    if ended is not None:
                        return ended
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except _Abort:
            return "timeout"


def _parse(results: _Results, data: bytes) -> None:
    """File every complete record in ``data``, in order."""
    import marshal

    at = 0
    while at + 4 <= len(data):
        size = int.from_bytes(data[at : at + 4], "big")
        if at + 4 + size > len(data):
            raise ValueError("a record cut short")
        if _take(results, marshal.loads(data[at + 4 : at + 4 + size])):
            return
        at += 4 + size


def _take(results: _Results, record: Any) -> bool:
    """File one record; True once the candidate's process said it is done."""
    if record == ("done",):
        return True
    if type(record) is tuple and len(record) == 2 and record[0] == "load":
        results.load = str(record[1])
    elif type(record) is tuple and len(record) == 3 and type(record[0]) is int:
        if record[0] not in results.checks:  # the first word on a check stands
            results.checks[record[0]] = (str(record[1]), record[2])
    else:
        raise ValueError("an unknown record")
    return False


def _judge(
    tally: _Tally,
    index: int,
    reason: str,
    got: Any,
    want: Any,
    tol: float,
    shown: tuple[Any, ...] = (),
) -> None:
    """Count one check the candidate's process reported (``shown``: the
    input, named in a wrong answer's message). A value that could not travel
    (``unplain``: its repr came instead) can only match an expected value
    that is not plain data either (a reference returning a ``Fraction``), by
    repr."""
    if reason == "unplain":
        if type(want) not in _PLAIN and got == repr(want):
            tally.add(index, None)
        else:
            tally.add(index, "wrong_answer", "got %s" % str(got)[:_MSG])
    elif reason != "ok":
        tally.add(index, reason, str(got))
    elif same(got, want, tol):
        tally.add(index, None)
    elif shown:
        tally.add(index, "wrong_answer", "input %.80r: got %.80r" % (shown[0], got))
    else:
        tally.add(index, "wrong_answer", "got %.150r" % (got,))


def _read_candidate(cfg: dict[str, Any]) -> bytes | str:
    """The delivered candidate bytes, or a message saying why delivery failed."""
    path = cfg["path"]
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        return "the candidate file was not delivered: %s" % exc
    try:
        os.unlink(path)  # a warm session may grade thousands: leave nothing behind
    except OSError:
        pass
    if cfg.get("size") is not None:
        if len(data) != cfg["size"] or checksum(data) != cfg["crc"]:
            return "the candidate file arrived altered (%d bytes, expected %d)" % (
                len(data),
                cfg["size"],
            )
    return data


def _compiled(data: Any, path: str) -> Any:
    """The candidate's code object: compiled as ``python <path>`` would
    (no future statement of this runtime's leaks into it), unless a pack
    compiled it already (``_precompiled``)."""
    if isinstance(data, (bytes, str)):
        return compile(data, path, "exec", dont_inherit=True)
    return data


def _load_module(cfg: dict[str, Any], data: Any, budget: _Budget) -> tuple[Any, str | None]:
    module = type(sys)(cfg["module"])
    module.__file__ = cfg["path"]
    sys.modules[cfg["module"]] = module

    def load() -> None:
        exec(_compiled(data, cfg["path"]), module.__dict__)

    reason, message = budget.run(load)
    if reason != "ok":
        return None, "%s while loading the candidate: %s" % (reason, message)
    fn = getattr(module, cfg["entry"], None)
    if not callable(fn):
        return None, "the candidate defines no function %r" % cfg["entry"]
    return fn, None


def _load_error(tally: _Tally, message: str) -> dict[str, Any]:
    if message.startswith("environment"):
        return {"reward": 0.0, "environment_error": message}
    verdict = tally.verdict()
    verdict["load_error"] = message[: _MSG * 2]
    verdict["timeout"] = message.startswith("timeout")
    verdict["memory_error"] = message.startswith("memory_error")
    return verdict


def _grade_unit(
    cfg: dict[str, Any], data: bytes, budget: _Budget, run: Any = None
) -> dict[str, Any]:
    tests = cfg["tests"]
    tally = _Tally(len(tests))
    results = (run or _in_own_process)(_unit_work(cfg, data, budget, None), budget)
    if results.load is not None:
        return _load_error(tally, results.load)
    for i, (_args, _kwargs, want) in enumerate(tests):
        reason, got = results.get(i)
        _judge(tally, i, reason, got, want, cfg["tol"])
    return tally.verdict()


def _unit_work(
    cfg: dict[str, Any], data: bytes, budget: _Budget, cases: Any
) -> Callable[[Callable[[Any], None]], None]:
    """What the candidate's process does for unit tests (``_<kind>_work``
    builders are looked up by name by a pack's spawner)."""

    def work(emit: Callable[[Any], None]) -> None:  # in the candidate's process
        fn, error = _load_module(cfg, data, budget)
        if error is not None:
            emit(("load", error))
            return
        for i, (args, kwargs, _want) in enumerate(cfg["tests"]):
            reason, got = budget.run(fn, *args, **kwargs)
            emit((i, reason, got))

    return work


class _RandomView:
    """``random`` as the generator sees it: a private Random, then the module."""

    def __init__(self, rng: Any, module: Any) -> None:
        self._rng = rng
        self._module = module

    def __getattr__(self, name: str) -> Any:
        try:
            return getattr(self._rng, name)
        except AttributeError:
            return getattr(self._module, name)


def _callable_from(
    source: str, name: str, params: str, base: dict[str, Any], prefer: tuple[str, ...]
) -> Any:
    """A full ``def`` is taken as written; a bare body (the seed's indented
    ``reference``) is wrapped as ``def name(params):``; for the generator, a
    bare expression is wrapped as ``return <expr>``."""
    namespace = dict(base)
    text = source.strip("\n")
    if text.lstrip().startswith("def "):
        before = set(namespace)
        exec(compile(text, "<" + name + ">", "exec"), namespace)
        new = [namespace[k] for k in namespace if k not in before and callable(namespace[k])]
        for wanted in prefer:
            if callable(namespace.get(wanted)):
                return namespace[wanted]
        if not new:
            raise ValueError("%s defines no function" % name)
        return new[0]
    if params == "" and "\n" not in text and not text.lstrip().startswith("return"):
        text = "    return " + text.strip()
    body = text if text[:1] in (" ", "\t") else "    " + text.replace("\n", "\n    ")
    exec(compile("def %s(%s):\n%s\n" % (name, params, body), "<" + name + ">", "exec"), namespace)
    return namespace[name]


def _grade_property(
    cfg: dict[str, Any],
    data: bytes,
    budget: _Budget,
    rng: Any,
    cases: Any = None,
    run: Any = None,
) -> dict[str, Any]:
    """``cases`` (inputs with their expected outputs) are drawn from ``rng``
    unless given: a pack draws them once per seed (``_pack``)."""
    tol = cfg["tol"]
    if cases is None:
        cases = _property_cases(cfg, rng)
    tally = _Tally(len(cases))
    results = (run or _in_own_process)(_property_work(cfg, data, budget, cases), budget)
    if results.load is not None:
        return _load_error(tally, results.load)
    for i, (x, want) in enumerate(cases):
        reason, got = results.get(i)
        _judge(tally, i, reason, got, want, tol, shown=(x,))
    return tally.verdict()


def _property_work(
    cfg: dict[str, Any], data: bytes, budget: _Budget, cases: Any
) -> Callable[[Callable[[Any], None]], None]:
    def work(emit: Callable[[Any], None]) -> None:  # in the candidate's process
        fn, error = _load_module(cfg, data, budget)
        if error is not None:
            emit(("load", error))
            return
        for i, (x, _want) in enumerate(cases):
            reason, got = budget.run(fn, x)
            emit((i, reason, got))

    return work


def _property_cases(cfg: dict[str, Any], rng: Any) -> list[tuple[Any, Any]]:
    """``k`` inputs from the generator and the reference's output for each."""
    import math
    import random

    k = int(cfg["k"])
    namespace: dict[str, Any] = {"random": _RandomView(rng, random), "math": math}
    if "string" in cfg["reference"] + cfg["generator"]:  # a failed import costs ~0.3 ms
        try:
            import string

            namespace["string"] = string
        except ImportError:  # a guest that cannot import beyond its preload
            pass
    ref = _callable_from(
        cfg["reference"], "_reference", "x", namespace, (cfg["entry"], "reference", "ref")
    )
    gen = _callable_from(cfg["generator"], "_generate", "", namespace, ("generate", "generator"))
    cases = []
    for _ in range(k):  # (drawn as a plain seeded grader would: CRN hold)
        x = gen()
        cases.append((x, ref(x)))
    return cases


def _scratch(path: str, content: bytes) -> int:
    """An unlinked read/write file holding ``content``, positioned at 0."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    os.unlink(path)
    view = memoryview(content)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, 0)
    return fd


def _grade_stdio(
    cfg: dict[str, Any], data: bytes, budget: _Budget, run: Any = None
) -> dict[str, Any]:
    """Run the candidate as a program once per test (in its own process, see
    ``_in_own_process``), with fds 0 and 1 on real files (so ``input()``,
    ``sys.stdin.buffer``, ``open(0)`` and ``os.write(1, ...)`` all behave as
    under a judge)."""
    tests = cfg["tests"]
    tally = _Tally(len(tests))
    results = (run or _in_own_process)(_stdio_work(cfg, data, budget, None), budget)
    if results.load is not None:
        return _load_error(tally, results.load)
    for i, (_given, want) in enumerate(tests):
        reason, got = results.get(i)
        if reason != "ok":
            tally.add(i, reason, str(got))
        elif same_tokens(str(got), want, cfg["tol"]):
            tally.add(i, None)
        else:
            tally.add(i, "wrong_answer", "got %.150r" % (str(got)[:150],))
    return tally.verdict()


def _stdio_work(
    cfg: dict[str, Any], data: bytes, budget: _Budget, cases: Any
) -> Callable[[Callable[[Any], None]], None]:
    def work(emit: Callable[[Any], None]) -> None:  # in the candidate's process
        reason, code = budget.run(lambda: _compiled(data, cfg["path"]))
        if reason != "ok":
            emit(("load", "%s while compiling the candidate: %s" % (reason, code)))
            return
        for i, (given, _want) in enumerate(cfg["tests"]):
            emit((i, *_run_program(cfg, code, given, budget)))

    return work


def _run_program(cfg: dict[str, Any], code: Any, given: str, budget: _Budget) -> tuple[str, str]:
    """One run of the compiled program on ``given``: (reason, its output or
    why it failed)."""
    real_in, real_out = sys.stdin, sys.stdout
    null = os.open(os.devnull, os.O_RDWR)
    fd_in = _scratch(cfg["path"] + ".stdin", given.encode("utf-8"))
    fd_out = _scratch(cfg["path"] + ".stdout", b"")
    os.dup2(fd_in, 0)
    os.dup2(fd_out, 1)
    os.close(fd_in)
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    opened = sys.stdout
    namespace = {"__name__": "__main__", "__file__": cfg["path"], "__builtins__": __builtins__}
    try:
        reason, message = budget.run(exec, code, namespace)
        for stream in (sys.stdout, opened):
            try:
                stream.flush()
            except Exception:
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


def main(cfg: dict[str, Any], how: str = "source") -> NoReturn:
    """Grade the delivered candidate as ``cfg`` says, write the verdict frame,
    and leave without running any shutdown code. ``how`` says how this
    runtime was loaded (``preloaded`` / ``bytecode`` / ``source``); the
    verdict reports it so the SDK can send less next time. A ``pack`` in
    ``cfg`` grades several candidates, one after another (``_pack``)."""
    if cfg.get("pack") is not None:
        # looked up by name: only a pack's program ships it (see program.py)
        globals()["_pack"](cfg, how)
    start = time.monotonic()
    frame = _Frame(cfg["marker"] + cfg["nonce"])
    frame.line("hello")
    rng = _private_rng(cfg)
    _mute()
    budget = _Budget(cfg, start)
    budget.private_fds.append(frame.fd)  # the verdict's way out: never the candidate's
    data = _read_candidate(cfg)
    if isinstance(data, str):
        frame.finish({"reward": 0.0, "delivery_error": data})
    verdict = _verdict(cfg, data, budget, rng)
    verdict["runtime"] = how
    frame.finish(verdict)


def _private_rng(cfg: dict[str, Any]) -> Any:
    """For a property: a private copy of the seeded global ``random`` state
    (the backend, or ``_pack``, seeded it), so the candidate cannot shift
    its inputs."""
    if cfg["kind"] != "property":
        return None
    import random

    rng = random.Random(0)  # (a seed of its own would cost an OS entropy read)
    rng.setstate(random.getstate())
    return rng


def _verdict(
    cfg: dict[str, Any],
    data: bytes,
    budget: _Budget,
    rng: Any,
    drawn: Any = None,
    run: Any = None,
) -> dict[str, Any]:
    """One candidate's verdict, by the grader of its kind (``drawn``: a
    property's cases, already drawn for this seed by ``_pack``; ``run``:
    how the candidate's process runs, ``_in_own_process`` unless given)."""
    grader = globals().get("_grade_" + cfg["kind"])  # looked up by name: see program.py
    try:
        if grader is None:
            return {"reward": 0.0, "grader_error": "unknown kind %r" % cfg["kind"]}
        if cfg["kind"] == "property":
            if isinstance(drawn, BaseException):
                raise drawn
            return grader(cfg, data, budget, rng, drawn, run)  # type: ignore[no-any-return]
        return grader(cfg, data, budget, run)  # type: ignore[no-any-return]
    except _SpawnerGone:
        raise
    except _Abort:
        return {"reward": 0.0, "timeout": True, "load_error": "the exec budget ran out"}
    except BaseException as exc:  # a broken reference/generator: the grader's fault
        return {"reward": 0.0, "grader_error": (type(exc).__name__ + ": " + str(exc))[:_MSG]}


def _drawn_once(memo: dict[str, Any], cfg: dict[str, Any], seed: str, rng: Any) -> Any:
    """A property's cases for ``seed``, drawn once per pack (or the error
    drawing them raised): the same seed draws the same cases, so common
    random numbers cost one draw per group."""
    if cfg["kind"] != "property":
        return None
    if seed not in memo:
        try:
            memo[seed] = _property_cases(cfg, rng)
        except BaseException as exc:  # reported by _verdict, as a lone grade would
            memo[seed] = exc
    return memo[seed]


# Where code of the guest's uid can leave files: what a pack's sweep watches.
_WATCHED = ("/", "/tmp", "/var/tmp", "/dev/shm")
_SYSV = ("/proc/sysvipc/shm", "/proc/sysvipc/msg", "/proc/sysvipc/sem")
_PR_SET_CHILD_SUBREAPER = 36
_PRECOMPILE_MAX = 1 << 16  # a bigger candidate compiles under its budget
_SPAWNER_ANSWER_S = 10.0  # a spawner silent this long is taken for gone


def _pack(cfg: dict[str, Any], how: str) -> NoReturn:
    """Grade ``cfg["pack"]``'s candidates one after another, each as a lone
    grade would be (its seed, its budget, its own process), and frame each
    verdict with the candidate's own nonce as soon as it is known.

    A candidate that runs out of its time budget ends the pack too: behind
    it, the rest would take up to one budget each.

    The candidates' processes are forked by a spawner (``_Spawner``), a
    process forked once with everything they need, so the grader never
    forks again and its own work copies no pages. Between two candidates
    everything the last one left is swept away: its processes (the spawner
    is their child subreaper, so even a daemonised one comes back to it)
    and the files it made where the guest's uid can write (``_Files``).
    What cannot be undone (a file that was there before and is gone or
    replaced, a System V object) ends the pack with an ``unpacked`` frame:
    the SDK grades every candidate without a verdict alone, in a clone of
    its own, as it does when the pack dies (a candidate killing the grader
    or the spawner) or cannot start (a shared guest, no subreaper)."""
    import random

    frame = _Frame(cfg["marker"] + cfg["nonce"])
    frame.line("hello")
    items = cfg["pack"]
    # every candidate is read (and unlinked) before any runs: none can touch another's
    jobs = []
    drawn: dict[str, Any] = {}
    for item in items:
        item_cfg = dict(cfg, path=item["path"], size=item["size"], crc=item["crc"], pack=None)
        data = _precompiled(_read_candidate(item_cfg), item_cfg["path"])
        random.seed(int(item["seed"], 16))  # as the backend seeds a lone grade's exec
        rng = _private_rng(item_cfg)
        cases = _drawn_once(drawn, item_cfg, item["seed"], rng)
        jobs.append((item, item_cfg, data, rng, cases))
    _mute()
    why = _not_dedicated()
    files = _Files()
    spawner = None if why is not None else _Spawner(jobs, frame.fd)
    if spawner is not None:
        why = spawner.broken
    if why is not None:
        frame.line("unpacked " + why)
        frame._exit(0)
    for index, (item, item_cfg, data, rng, cases) in enumerate(jobs):
        start = time.monotonic()
        budget = _Budget(item_cfg, start)

        def run(work: Any, budget: _Budget, index: int = index) -> _Results:
            return spawner.run(index, budget)  # type: ignore[union-attr]

        try:
            if isinstance(data, str):
                verdict = {"reward": 0.0, "delivery_error": data}
            else:
                verdict = _verdict(item_cfg, data, budget, rng, cases, run)
        except _SpawnerGone:
            frame.line("unpacked the spawner is gone (a candidate killed it)")
            break
        left_behind = spawner.left_behind or files.sweep()  # type: ignore[union-attr]
        if left_behind is None and budget.left() <= 0:
            # the rest would wait behind every candidate that loops: alone,
            # they are graded side by side
            left_behind = "a candidate ran out of its time budget"
        verdict["runtime"] = how
        verdict["seed"] = item["seed"]
        verdict["ms"] = (time.monotonic() - start) * 1000.0
        marker = cfg["marker"] + item["nonce"]
        frame.line("hello\n" + marker + " " + _verdict_json(verdict), marker)
        if left_behind is not None:
            frame.line("unpacked " + left_behind)
            break
    frame._exit(0)


class _SpawnerGone(Exception):
    """The spawner stopped answering: a candidate killed it."""


class _Spawner:
    """Forks the candidates' processes of a pack, on the grader's word.

    Forked once, with every candidate's job in its memory, it answers two
    requests on a socket: ``r<index>`` with a pipe's write end (fork that
    candidate's process, reply its pid) and ``w<pid>`` (kill it, reap it,
    kill whatever it left below the spawner; reply the wait status and what
    could not be killed). ``_verdict`` runs in the grader with ``run`` in
    place of ``_in_own_process``: the spawner builds the same work from the
    same job (``_<kind>_work``) and the grader collects it (``_collect``)."""

    def __init__(self, jobs: list[Any], private_fd: int) -> None:
        import socket

        self.left_behind: str | None = None
        self.broken: str | None = None
        if not hasattr(socket, "send_fds"):
            self.broken = "this guest's Python cannot pass file descriptors"
            return
        ours, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            try:
                ours.close()
                os.close(private_fd)
            except BaseException:
                os._exit(0)
            _spawn_loop(theirs, jobs)
        theirs.close()
        self.sock = ours
        # a spawner that a candidate stopped (same uid) must not hold the pack
        ours.settimeout(_SPAWNER_ANSWER_S)
        try:
            hello = ours.recv(4096).decode("utf-8", "replace")
        except OSError:
            hello = ""
        if hello != "ok":
            self.broken = hello or "the spawner did not start"

    def run(self, index: int, budget: _Budget) -> _Results:
        import socket

        read_fd, write_fd = os.pipe()
        try:
            socket.send_fds(self.sock, [b"r%d" % index], [write_fd])
            reply = self.sock.recv(64)
        except OSError:
            reply = b""
        finally:
            os.close(write_fd)
        if not reply.isdigit():
            os.close(read_fd)
            raise _SpawnerGone()
        pid = int(reply)
        return _collect(read_fd, pid, budget, lambda: self.reap(pid))

    def reap(self, pid: int) -> int:
        try:
            self.sock.send(b"w%d" % pid)
            reply = self.sock.recv(4096).decode("utf-8", "replace")
        except OSError:
            reply = ""
        status, sep, why = reply.partition(" ")
        if not sep or not status.lstrip("-").isdigit():
            raise _SpawnerGone()
        self.left_behind = why or None
        return int(status)


def _spawn_loop(sock: Any, jobs: list[Any]) -> NoReturn:
    """The spawner's life (see ``_Spawner``)."""
    import random
    import socket

    why = _become_subreaper()
    if why is None and jobs:
        _warm_up(jobs[0][1])
    sock.send((why or "ok").encode())
    while why is None:
        msg, fds, _flags, _addr = socket.recv_fds(sock, 64, 1)
        if not msg:
            break
        if msg[:1] == b"r" and fds:
            item, item_cfg, data, _rng, cases = jobs[int(msg[1:])]
            random.seed(int(item["seed"], 16))
            state = random.getstate()
            os.environ["COLLIMATE_SEED"] = item["seed"]
            budget = _Budget(item_cfg, time.monotonic())
            build = globals().get("_%s_work" % item_cfg["kind"])
            work = build(item_cfg, data, budget, cases)  # type: ignore[misc]
            pid = os.fork()
            if pid == 0:
                try:
                    sock.close()
                    # random reseeds itself from the OS in a forked child
                    random.setstate(state)
                except BaseException:
                    os._exit(0)
                _report(work, fds[0])
            os.close(fds[0])
            sock.send(b"%d" % pid)
        elif msg[:1] == b"w":
            pid = int(msg[1:])
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                status = os.waitpid(pid, 0)[1]
            except OSError:
                status = 0
            left = _kill_descendants()
            sock.send(("%d %s" % (status, left or "")).encode())
        else:
            for fd in fds:
                os.close(fd)
    os._exit(0)


def _precompiled(data: bytes | str, path: str) -> Any:
    """A delivered candidate's code object, compiled once by the grader so
    that no candidate's process pays for (and copies the pages of) the
    compiler: only a small source that compiles (the others are compiled,
    and fail, in the candidate's process under its budget, as alone)."""
    if isinstance(data, str) or len(data) > _PRECOMPILE_MAX:
        return data
    try:
        return compile(data, path, "exec", dont_inherit=True)
    except Exception:
        return data


def _warm_up(cfg: dict[str, Any]) -> None:
    """Run the candidates' code path a few dozen times in the spawner, on a
    harmless function, then freeze what it holds: the interpreter's
    specialising of that code, and the collector walking inherited
    objects, would otherwise write to (and copy) those pages in every
    candidate's process."""
    import gc

    name = "_collimate_warm_up"
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        budget = _Budget(dict(cfg, budget=60.0, test_timeout=None), time.monotonic())
        code = compile("def %s(*a, **k):\n    return a\n" % cfg["entry"], name, "exec")
        fn, _error = _load_module(dict(cfg, module=name, path=name), code, budget)
        outbox = _Outbox(null)
        for i in range(64):
            if fn is not None:
                outbox.put((i, *budget.run(fn, i)))
        outbox.put(("done",))
    except Exception:
        pass
    finally:
        sys.modules.pop(name, None)
        os.close(null)
    gc.collect()
    gc.freeze()


class _Files:
    """What the guest's uid can write, as the pack found it: new entries are
    removed between two candidates, a missing or replaced one ends the pack.
    A directory whose change time did not move is not listed again."""

    def __init__(self) -> None:
        self.listings: dict[str, tuple[Any, dict[str, int]]] = {}
        for path in (*_WATCHED, os.getcwd()):
            try:
                self.listings.setdefault(path, (_stamp(path), _listing(path)))
            except OSError:
                pass
        self.ipc = _sysv_objects()

    def sweep(self) -> str | None:
        """None when the guest is as before; else what could not be undone."""
        for path, (stamp, before) in self.listings.items():
            try:
                if _stamp(path) == stamp:
                    continue
                now = _listing(path)
            except OSError as exc:
                return "%s: %s" % (path, exc)
            for name in now:
                if name not in before:
                    full = os.path.join(path, name)
                    if not _remove(full):
                        return "could not remove %s" % full
            for name, inode in before.items():
                if now.get(name) != inode:
                    return "%s was removed or replaced" % os.path.join(path, name)
            try:
                self.listings[path] = (_stamp(path), before)
            except OSError as exc:
                return "%s: %s" % (path, exc)
        if _sysv_objects() != self.ipc:
            return "System V ipc objects were left behind"
        return None


def _stamp(path: str) -> Any:
    """What changes whenever an entry of the directory is added, removed or
    renamed (its change time, to the nanosecond), and which directory it is."""
    st = os.lstat(path)
    return (st.st_ino, st.st_dev, st.st_ctime_ns, st.st_mtime_ns)


def _not_dedicated() -> str | None:
    """Why this guest may be shared (then sweeping it could remove what
    others make): run as root, or with another process of the same uid in
    sight (a process-mode backend, a developer's machine). A namespaced
    clone shows its pid 1 (root) and the grader, whose ``/proc`` entry is
    root's too once it is not dumpable."""
    uid = os.getuid()
    if uid == 0:
        return "the grader runs as root"
    me = os.getpid()
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != me:
            try:
                if os.stat("/proc/" + name).st_uid == uid:
                    return "process %s of uid %d shares this guest" % (name, uid)
            except OSError:
                pass
    return None


def _become_subreaper() -> str | None:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            return "prctl(PR_SET_CHILD_SUBREAPER) failed (errno %d)" % ctypes.get_errno()
    except Exception as exc:  # no ctypes in this guest
        return "cannot become a child subreaper: %s" % exc
    if not os.path.exists("/proc/self/task/%d/children" % os.getpid()):
        return "this guest's /proc lists no children"
    return None


def _kill_descendants() -> str | None:
    """SIGKILL every process below the caller until none is left (the
    children of a killed one come back to the caller, their subreaper)."""
    listing = "/proc/self/task/%d/children" % os.getpid()  # (the caller has one thread)
    for _ in range(1000):
        try:
            with open(listing) as fh:
                kids = [int(pid) for pid in fh.read().split()]
        except OSError:
            return "cannot list the processes left"
        if not kids:
            return None
        for pid in kids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in kids:
            try:
                os.waitpid(pid, 0)
            except OSError:
                pass
    return "processes kept coming back"


def _listing(path: str) -> dict[str, int]:
    with os.scandir(path) as entries:
        return {entry.name: entry.inode() for entry in entries}


def _remove(path: str) -> bool:
    """Remove ``path`` (a whole tree for a directory, never following a
    link); False when something stays."""
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            try:
                os.chmod(path, 0o700)  # the code may have locked its own directory
            except OSError:
                pass
            with os.scandir(path) as entries:
                names = [entry.name for entry in entries]
            for name in names:
                if not _remove(os.path.join(path, name)):
                    return False
            os.rmdir(path)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError:
        return False
    return True


def _sysv_objects() -> list[str]:
    """The ids of every System V ipc object this guest can see."""
    ids: list[str] = []
    for path in _SYSV:
        try:
            with open(path) as fh:
                ids.extend(
                    path[-3:] + line.split()[1] for line in fh.readlines()[1:] if line.split()
                )
        except OSError:
            pass
    return ids


def _own_id() -> str | None:
    """sha256 of this file (16 hex) when imported from a file: a template
    that preloads this module is used only by an SDK shipping the same one."""
    path = globals().get("__file__")
    if not path:
        return None
    import hashlib

    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()[:16]


RUNTIME_ID = _own_id()
