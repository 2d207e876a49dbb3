"""The guest side of a stateful Python kernel (stdlib only, Python 3.8+).

This file is not imported by the SDK: its text is copied into the sandbox
once per kernel (:class:`~collimate_rl.Kernel` does it) and run there with
the guest's ``python3``. One file plays three parts, by its first argument:

``start DIR``   spawn a kernel in the background (a session of its own, so
                it outlives the exec that started it) and wait for its socket;
``run DIR CELL`` one cell: the *runner*, a short-lived client of the kernel,
                run by one session exec per cell. It sends the cell over the
                kernel's unix socket, waits up to the cell timeout, then
                interrupts (SIGINT), then kills and restarts a kernel that
                does not answer, and prints one result line for the SDK;
``start-run DIR CELL`` both, in one process: a kernel's first cell;
``restart DIR`` / ``stop DIR`` what they say; ``ping DIR`` whether the
                kernel answers (a runner of the template's own interpreter can reach it);
``fork DIR REQUEST`` have the kernel fork copies of itself (see ``fork_kernels``);
``reinstall`` (not a command: ``REINSTALLER`` of ``kernel._state`` calls
                ``reinstall`` with the program's text) a kernel made anew in
                its directory, whatever is left of the old one.

The kernel itself is two processes: a *keeper* (session leader, the
kernel's parent, does nothing but wait) and the *kernel* that executes the
cells in its main thread, so SIGINT lands in the cell as KeyboardInterrupt.
A cell that kills its parent kills only the keeper; one that kills the
kernel (``os._exit``, a signal) is noticed by the runner as a dropped
connection and answered with a fresh kernel and ``restarted``. When the
kernel dies, or its directory stops naming it (a cell deleted it), its
keeper removes its files and kills what is left of its process group, so a
dead kernel leaves nothing behind.

Whatever a cell does is the model's doing, and must come back as a cell
result, never as a failure of the sandbox (which would drop the sample from
training: a policy would learn to hide its mistakes that way). So:

* the keeper and the kernel live in a Landlock domain scoped for signals,
  with a seccomp filter for the calls one process of a uid may make on
  another without a ptrace check (``guard``): a cell cannot signal, stop,
  trace or limit the runner, the sandbox's exec processes or other kernels;
* the kernel says ``started`` once it has taken a cell: a kernel that dies
  or cannot take it before that (what an earlier cell left: no descriptors,
  its machinery broken) is restarted by the runner and the cell sent again,
  so the cell runs once, in a fresh kernel, and its result says
  ``restarted``; after that, a lost kernel is the cell's;
* the machinery looks builtins up in a copy of its own and captures output
  with threads started with the kernel, so a cell that replaces builtins or
  fills the process cap does not break the next cell; a cell that lowers
  the kernel's resource limits costs a restart right after it;
* the runner trusts nothing the kernel sends or the directory holds: the
  answer is checked field by field, and a pid is only killed while it
  names a kernel or keeper process;
* what the runner cannot mend (the directory deleted, the runner itself
  killed) the SDK mends with ``reinstall``, or with a fresh sandbox.

The kernel listens on an abstract unix socket (its name in ``DIR/address``)
and answers only peers of its own uid: an abstract socket vanishes with its
process (no file to leak), and Landlock's scoping (see ``confine``) keeps a
fork from connecting to one it did not make, which a socket file would not.
"""

from __future__ import annotations

# Only what the runner needs is imported here: the runner is one process
# per cell, so its start-up is the floor of every call. What the kernel
# alone uses (ast, traceback, threading, subprocess, ctypes, random,
# secrets) is imported where it is used, and costs the kernel nothing more
# (a module is imported once per process).
import binascii
import builtins
import codecs
import contextlib
import functools
import gc
import io
import json
import os
import select
import signal
import socket
import struct
import sys
import time
from types import FrameType

# (typing itself is no cheap import; mypy reads this name as true)
TYPE_CHECKING = False
if TYPE_CHECKING:
    import traceback
    from collections.abc import Callable
    from typing import Any

if __name__ == "__main__":
    # The kernel (run as a script; the runner imports this file as a
    # module): its own code looks builtins up in a copy taken now, so a cell
    # that replaces one (``builtins.__import__``, ``len``) changes what cells
    # and the libraries they use see, as in any interpreter, but never the
    # kernel's framing, capture or answers. Every function below is made
    # after this line, and keeps this dictionary as its builtins.
    globals()["__builtins__"] = dict(vars(builtins))

# Keeping the kernel apart from the sandbox's other processes, as the
# grader keeps its candidates (Landlock, seccomp, oom_score_adj): shipped
# as one file, with separation.py joined in here (``_guest_source``).
from .cells import compile_cell  # noqa: E402
from .separation import (  # noqa: E402
    _W_LANDLOCK_CREATE,
    _W_LANDLOCK_MIN_ABI,
    _W_LANDLOCK_RESTRICT,
    _w_filter,
    _w_first_to_go,
    _w_seccomp,
)

RESULT_PREFIX = "@@collimate-kernel-result@@ "
KERNEL_FILE = os.path.abspath(__file__)
START_WAIT_S = 20.0
#: kernels that may die as they start before a start gives up
START_DEATHS = 3
#: seconds a start goes on asking for a process the sandbox's cap refuses
SPAWN_RETRY_S = 3.0
#: seconds a kernel has to say it took a cell, once sent (it answers at once)
TAKE_WAIT_S = 10.0
#: how often a keeper checks that its directory still names it
KEEPER_POLL_S = 1.0
#: the largest frame either side reads: a rewritten kernel cannot make the
#: runner take in more than this (the exec's output is capped far lower)
MAX_FRAME = 1 << 28
#: what a kernel sends once it has taken a cell (see ``CellRunner.run``)
STARTED = {"started": True}
#: process names (``comm``, 15 bytes at most) the server counts and reaps by
KERNEL_NAME = b"collimate-kern"
KEEPER_NAME = b"collimate-keep"
PR_SET_NAME, PR_SET_NO_NEW_PRIVS = 15, 38
SO_PEERCRED = 17


# framing: a 4-byte big-endian length, then that many bytes of JSON
def send_frame(sock: socket.socket, message: dict[str, Any]) -> None:
    data = json.dumps(message).encode()
    sock.sendall(struct.pack(">I", len(data)) + data)


def recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks = []
    while size:
        chunk = sock.recv(min(size, 1 << 20))
        if not chunk:
            raise EOFError("connection closed")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def recv_frame(sock: socket.socket) -> dict[str, Any]:
    """One frame's JSON object (ValueError: anything else, or too big)."""
    (size,) = struct.unpack(">I", recv_exact(sock, 4))
    if size > MAX_FRAME:
        raise ValueError(f"a frame of {size} bytes")
    answer = json.loads(recv_exact(sock, size).decode())
    if not isinstance(answer, dict):
        raise ValueError(f"a frame holding {type(answer).__name__}, not an object")
    return answer


# --- the kernel -----------------------------------------------------------


class CappedWriter(io.TextIOBase):
    """A cell's stdout or stderr: kept up to ``cap`` characters, the rest
    counted as truncation and dropped (a printing loop costs no memory)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: list[str] = []
        self.size = 0
        self.truncated = False

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        text = str(text)
        room = self.cap - self.size
        if len(text) > room:
            self.truncated = True
            text = text[: max(room, 0)]
        if text:
            self.parts.append(text)
            self.size += len(text)
        return len(text)

    def getvalue(self) -> str:
        return "".join(self.parts)


def cap_text(text: str, cap: int) -> tuple[str, bool]:
    return (text, False) if len(text) <= cap else (text[:cap], True)


class Pump:
    """A thread that drains one descriptor's pipe for one cell after another:
    started with the kernel and kept, since a cell may leave no room for a
    new thread (a fork bomb fills the sandbox's process cap) and the next
    cell must still run."""

    def __init__(self) -> None:
        import queue
        import threading

        self.jobs: queue.SimpleQueue[DescriptorCapture] = queue.SimpleQueue()
        threading.Thread(target=self.serve, name="collimate-pump", daemon=True).start()

    def serve(self) -> None:
        while True:
            capture = self.jobs.get()
            try:
                capture.pump()
            except Exception:  # a cell's writer gone wrong: the next capture still runs
                pass
            finally:
                capture.finished.set()


class DescriptorCapture:
    """File descriptor ``fd`` (1 or 2) into ``writer`` for one cell: a pipe
    read by the kernel's ``pump`` thread, so what a subprocess writes is
    captured with what Python prints, in the order written, and a flood is
    drained and dropped past the cap rather than blocking the cell."""

    def __init__(self, fd: int, writer: CappedWriter, pump: Pump) -> None:
        import threading

        self.fd = fd
        self.writer = writer
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.done = threading.Event()
        self.finished = threading.Event()
        read_end, write_end = os.pipe()
        try:
            os.set_blocking(read_end, False)
            self.saved = os.dup(fd)
        except BaseException:
            os.close(read_end)
            os.close(write_end)
            raise
        os.dup2(write_end, fd)
        os.close(write_end)
        self.read_end = read_end
        self.stream = io.TextIOWrapper(
            io.FileIO(fd, "w", closefd=False),
            encoding="utf-8",
            errors="backslashreplace",
            line_buffering=True,
            write_through=True,
        )
        pump.jobs.put(self)

    def drain(self) -> bool:
        """Read what the pipe holds now; False once it is closed."""
        while True:
            try:
                chunk = os.read(self.read_end, 65536)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not chunk:
                return False
            self.writer.write(self.decoder.decode(chunk))

    def pump(self) -> None:
        while not self.done.is_set():
            with contextlib.suppress(OSError, ValueError):
                select.select([self.read_end], [], [], 0.05)
            if not self.drain():
                break

    def stop(self) -> None:
        """Put the descriptor back, take in what the cell left in the pipe
        (a child still holding it is not waited for) and close it."""
        with contextlib.suppress(OSError, ValueError):
            self.stream.flush()
        os.dup2(self.saved, self.fd)
        os.close(self.saved)
        self.done.set()
        self.finished.wait(5)
        self.drain()
        self.writer.write(self.decoder.decode(b"", final=True))
        os.close(self.read_end)


#: the limits a kernel needs to go on serving: a cell that lowers one (in
#: the kernel's own process) costs a restart right after it
SERVING_LIMITS = (
    "RLIMIT_NOFILE",
    "RLIMIT_NPROC",
    "RLIMIT_AS",
    "RLIMIT_DATA",
    "RLIMIT_STACK",
    "RLIMIT_CPU",
    "RLIMIT_FSIZE",
)


def serving_limits() -> dict[str, tuple[float, float]]:
    """This process's soft and hard :data:`SERVING_LIMITS` (unlimited: inf)."""
    import resource

    def size(value: int) -> float:
        return float("inf") if value == resource.RLIM_INFINITY or value < 0 else float(value)

    limits = {}
    for name in SERVING_LIMITS:
        number = getattr(resource, name, None)
        if number is None:
            continue
        with contextlib.suppress(OSError, ValueError):
            soft, hard = resource.getrlimit(number)
            limits[name] = (size(soft), size(hard))
    return limits


def lowered_limits(before: dict[str, tuple[float, float]]) -> list[str]:
    """The names of the limits now below what they were ``before``."""
    now = serving_limits()
    return [
        name
        for name, (soft, hard) in before.items()
        if name in now and (now[name][0] < soft or now[name][1] < hard)
    ]


class CellRunner:
    """Executes cells in one namespace, in the main thread."""

    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
        self.count = 0
        self.in_cell = False
        self.pid = os.getpid()
        self.pumps: tuple[Pump, Pump] | None = None
        self.limits: dict[str, tuple[float, float]] = {}

    def prepare(self) -> None:
        """What this process needs before it serves: its pumps (threads do
        not survive a fork, so a forked kernel makes its own) and the limits
        it starts with."""
        self.pid = os.getpid()
        self.pumps = (Pump(), Pump())
        self.limits = serving_limits()
        signal.signal(signal.SIGINT, self.on_sigint)

    def on_sigint(self, signum: int, frame: FrameType | None) -> None:
        # an interrupt between cells (a late one) must not hit the machinery
        if self.in_cell:
            raise KeyboardInterrupt

    def compile_cell(self, code: str) -> tuple[Any, Any]:
        self.count += 1
        return compile_cell(code, f"<cell {self.count}>")

    def capture(self, out: CappedWriter, err: CappedWriter) -> list[DescriptorCapture]:
        """The cell's stdout and stderr captures (OSError: no descriptors left)."""
        assert self.pumps is not None
        first = DescriptorCapture(1, out, self.pumps[0])
        try:
            return [first, DescriptorCapture(2, err, self.pumps[1])]
        except BaseException:
            first.stop()
            raise

    def run(self, request: dict[str, Any], take: Callable[[], None]) -> dict[str, Any]:
        """Run one cell. ``take`` is called once the cell is set up and
        about to run: a failure before it is the kernel's (the runner starts
        a fresh one and sends the cell again), anything after it the cell's."""
        cap = int(request.get("output_limit", 65536))
        out, err = CappedWriter(cap), CappedWriter(cap)
        value = error = None
        truncated = False
        captures = self.capture(out, err)
        try:
            take()
        except BaseException:
            for capture in captures:
                capture.stop()
            raise
        started = time.monotonic()
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = (capture.stream for capture in captures)
        self.in_cell = True
        try:
            try:
                body, last = self.compile_cell(request["code"])
                exec(body, self.namespace)
                if last is not None:
                    result = eval(last, self.namespace)
                    if result is not None:
                        self.namespace["_"] = result
                        value, truncated = cap_text(repr(result), cap)
            finally:
                self.in_cell = False
        except BaseException as exc:  # the cell's own failure, SystemExit too
            self.in_cell = False
            error = describe_or_name(exc)
        finally:
            if os.getpid() != self.pid:  # a forked child ending its cell: never answers
                os._exit(0)
            sys.stdout, sys.stderr = saved
            for capture in captures:
                capture.stop()
            # the kernel's interrupt is its own: a handler the cell set
            # would keep the next timed-out cell from being interrupted
            signal.signal(signal.SIGINT, self.on_sigint)
        answer = {
            "stdout": out.getvalue(),
            "stderr": err.getvalue(),
            "value": value,
            "error": error,
            "duration_s": time.monotonic() - started,
            "truncated": truncated or out.truncated or err.truncated,
        }
        lowered = lowered_limits(self.limits)
        if lowered:
            answer["restart"] = (
                f"the cell lowered the interpreter's resource limits ({', '.join(lowered)})"
            )
        return answer


def describe_or_name(exc: BaseException) -> dict[str, str]:
    """:func:`describe`, or, when the library code it uses fails (a cell
    replaced a builtin that code needs, say), the type and message alone:
    the cell's error is still the cell's, and the kernel goes on."""
    try:
        return describe(exc)
    except Exception:
        return {"type": type(exc).__name__, "message": safe_str(exc), "traceback": ""}


def describe(exc: BaseException) -> dict[str, str]:
    """Type, message and the traceback of the cell's frames (and of the
    code they called); the kernel's own frames, above the cell or at its
    interrupt, are left out, in chained exceptions too."""
    import traceback

    summary = traceback.TracebackException(type(exc), exc, exc.__traceback__)
    seen = set()
    pending: list[traceback.TracebackException | None] = [summary]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        frames = [frame for frame in current.stack if frame.filename != KERNEL_FILE]
        current.stack = traceback.StackSummary.from_list(frames)
        pending.extend((current.__cause__, current.__context__))
    return {
        "type": type(exc).__name__,
        "message": safe_str(exc),
        "traceback": "".join(summary.format()),
    }


def safe_str(exc: BaseException) -> str:
    """``str(exc)``, or a stand-in when the exception's own ``__str__`` raises."""
    try:
        return str(exc)
    except Exception:
        return f"<{type(exc).__name__}: its message could not be read>"


def serve(directory: str) -> None:
    """The keeper, then (forked) the kernel: listen, run cells one by one.
    Both are guarded first (``guard``); in a fork's directory
    (``fork.json``) the kernel confines itself too."""
    fork = read_json(os.path.join(directory, "fork.json"))
    guarded = guard()
    child = os.fork()
    if child:  # the keeper: the kernel's parent, holding nothing
        keep(directory, child)
    runner = CellRunner()
    sys.stderr.write(f"collimate kernel {os.getpid()}: {guarded}\n")
    first_to_go()
    # the address and pid first: a fork's kernel cannot write them once confined
    # (nothing is served before the loop below, so not before that either)
    listener = listen(directory)
    write_file(os.path.join(directory, "pid"), str(os.getpid()))
    if fork is not None:
        become_fork(directory, runner, fork, fresh=True)
    runner.prepare()
    # the log kept what a failed start said; from here on, what is written
    # outside a cell (a thread or child it left behind) is dropped, not stored
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)
    serve_loop(directory, listener, runner)


def keep(directory: str, kernel: int) -> None:
    """The keeper's whole life: wait for the kernel (or for its directory to
    stop naming this keeper), then remove its files (those still naming it:
    a restart may have written new ones) and kill what is left of its
    process group (the kernel, children of its cells), itself last."""
    set_name(KEEPER_NAME)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    outlive(directory, kernel)
    if read_int(os.path.join(directory, "pid")) == kernel:
        for name in ("pid", "address"):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(directory, name))
    if read_int(os.path.join(directory, "pgid")) == os.getpgrp():
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(directory, "pgid"))
    with contextlib.suppress(OSError):
        os.killpg(os.getpgrp(), signal.SIGKILL)
    os._exit(0)


def outlive(directory: str, kernel: int) -> None:
    """Return once the kernel has died, or once ``DIR/pgid``, having named
    this keeper's group, no longer does: a cell deleted or replaced the
    kernel's files, so nothing can reach the kernel any more, and what is
    left of it would only hold the sandbox's memory and processes."""
    pidfd = None
    with contextlib.suppress(AttributeError, OSError):  # Python 3.9+, Linux 5.3+
        pidfd = os.pidfd_open(kernel)
    armed = False
    while True:
        try:
            if os.waitpid(kernel, os.WNOHANG)[0]:
                return
        except ChildProcessError:
            return
        named = read_int(os.path.join(directory, "pgid")) == os.getpgrp()
        if armed and not named:
            return
        armed = armed or named
        if pidfd is None:
            time.sleep(KEEPER_POLL_S)
        else:
            with contextlib.suppress(OSError, ValueError):
                select.select([pidfd], [], [], KEEPER_POLL_S)


def listen(directory: str) -> socket.socket:
    """A fresh abstract socket, its name written to ``DIR/address``."""
    set_name(KERNEL_NAME)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    name = "collimate-kernel-" + os.urandom(10).hex()
    listener.bind("\0" + name)
    listener.listen(4)
    write_file(os.path.join(directory, "address"), name)
    return listener


def serve_loop(directory: str, listener: socket.socket, runner: CellRunner) -> None:
    """Answer one connection at a time, from peers of this uid only: a cell,
    or a request to fork (see ``fork_kernels``). A kernel that can no longer
    accept (a cell left it no descriptor) exits, and the next runner starts
    a fresh one; one whose cell lowered its limits exits once it answered."""
    while True:
        try:
            conn, _ = listener.accept()
        except KeyboardInterrupt:
            continue
        restart = False
        try:
            with conn:
                if peer_uid(conn) != os.getuid():
                    continue
                request = recv_frame(conn)
                if request.get("op") == "fork":
                    send_frame(conn, fork_kernels(directory, listener, conn, runner, request))
                else:
                    answer = runner.run(request, functools.partial(send_frame, conn, STARTED))
                    restart = bool(answer.get("restart"))
                    send_frame(conn, answer)
        except BaseException:  # a client gone, a late interrupt: next connection
            if os.getpid() != runner.pid:
                os._exit(0)
        if restart:
            os._exit(0)


def peer_uid(conn: socket.socket) -> int:
    raw = conn.getsockopt(socket.SOL_SOCKET, SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", raw)[1])


def set_name(name: bytes) -> None:
    """The process's ``comm``: what the server finds kernels by."""
    import ctypes

    with contextlib.suppress(Exception):
        libc().prctl(PR_SET_NAME, ctypes.c_char_p(name), 0, 0, 0)


_LIBC: list[Any] = []


def libc() -> Any:
    if not _LIBC:
        import ctypes

        _LIBC.append(ctypes.CDLL(None, use_errno=True))
    return _LIBC[0]


def read_json(path: str) -> dict[str, Any] | None:
    try:
        with open(path) as handle:
            value = json.load(handle)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


# --- forks ------------------------------------------------------------------

# Landlock (Linux 5.13+; scoping of signals and abstract sockets 6.12+, ABI 6)
SYS_ADD_RULE = 445  # landlock_add_rule (creating and entering: separation.py)
FS_ALL = (1 << 16) - 1  # every filesystem right up to ABI 5
FS_READ = 1 | 4 | 8  # execute, read file, read dir
FS_FILE = 1 | 2 | 4 | (1 << 14) | (1 << 15)  # the rights a rule on a file may hold
NET_TCP = 1 | 2  # bind, connect
SCOPES = 1 | 2  # abstract unix sockets, signals
#: what a fork may read of the system (every top-level dir but these)
NOT_SHARED = ("tmp", "proc", "dev", "run", "var", "home", "root", "mnt", "media", "srv")
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
FORK_WAIT_S = 60.0


def fork_kernels(
    directory: str,
    listener: socket.socket,
    conn: socket.socket,
    runner: CellRunner,
    request: dict[str, Any],
) -> dict[str, Any]:
    """Fork one copy of this kernel per entry of ``request["forks"]`` (its
    ``directory`` and ``seed``) and answer what each reported once ready.

    Each copy is a fork(2) of this process (its memory shared copy-on-write
    until written), detached by a double fork (reaped by the sandbox's init,
    not by this kernel: a cell's own ``wait`` never sees it), given a keeper
    and a session of its own like any kernel, its seed, then confined
    (``become_fork``) before it serves; it never runs a cell of the parent's."""
    answers: list[dict[str, Any]] = []
    if os.path.exists(os.path.join(directory, "fork.json")):
        why = "a fork cannot be forked again (its confinement keeps it from making one)"
        return {"forks": [{"ok": False, "error": why} for _ in request.get("forks") or []]}
    for spec in request.get("forks") or []:
        read_end, write_end = os.pipe()
        middle = os.fork()
        if middle == 0:  # pragma: no cover (a child: its coverage is not collected)
            try:
                os.close(read_end)
                listener.close()
                conn.close()
                start_fork(str(spec["directory"]), spec.get("seed"), runner, write_end)
            finally:
                os._exit(1)
        os.close(write_end)
        os.waitpid(middle, 0)
        answers.append(read_answer(read_end))
    return {"forks": answers, "parent": directory}


def read_answer(fd: int) -> dict[str, Any]:
    """A fork's report (one JSON line on its pipe), or why there is none."""
    chunks = []
    deadline = time.monotonic() + FORK_WAIT_S
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(fd)
    try:
        answer: dict[str, Any] = json.loads(b"".join(chunks).decode())
    except ValueError:
        return {"ok": False, "error": "the fork did not report (it died, or the cap on processes)"}
    return answer


def start_fork(directory: str, seed: str | None, runner: CellRunner, report: int) -> None:
    """In the middle child: make the fork's directory, then a keeper (a
    session of its own) and under it the fork's kernel; the middle exits.

    The directory holds what the runner trusts (the program it runs, the
    kernel's address, pids and ``fork.json``), none of it writable by the
    fork; the fork's own files go in its ``work`` subdirectory."""
    try:
        os.umask(0o077)
        os.mkdir(directory, 0o700)
        os.mkdir(os.path.join(directory, "work"), 0o700)
        with open(KERNEL_FILE, "rb") as source:
            program = source.read()
        with open(os.path.join(directory, "kernel.py"), "wb") as copy:
            copy.write(program)
        write_file(os.path.join(directory, "fork.json"), json.dumps({"seed": seed}))
        write_file(os.path.join(directory, "started"), "")
    except OSError as exc:
        os.write(report, json.dumps({"ok": False, "error": f"{directory}: {exc}"}).encode())
        raise
    if os.fork():
        os._exit(0)  # the middle: its parent waits for it, not for the fork
    os.setsid()
    write_file(os.path.join(directory, "pgid"), str(os.getpid()))
    kernel = os.fork()
    if kernel:
        os.close(report)
        keep(directory, kernel)
    answer: dict[str, Any] = {"ok": True, "directory": directory, "pid": os.getpid()}
    try:
        listener = listen(directory)
        write_file(os.path.join(directory, "pid"), str(os.getpid()))
        answer.update(become_fork(directory, runner, {"seed": seed}, fresh=False))
        runner.prepare()
    except BaseException as exc:
        answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    os.write(report, json.dumps(answer).encode())
    os.close(report)
    if not answer["ok"]:
        os._exit(1)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    serve_loop(directory, listener, runner)
    os._exit(0)


def become_fork(
    directory: str, runner: CellRunner, fork: dict[str, Any], *, fresh: bool
) -> dict[str, Any]:
    """What makes a kernel a fork: its seed, its own working directory
    (``DIR/work``), and its confinement. ``fresh`` is a kernel started anew in a fork's
    directory (its state was lost): it keeps the fork's seed and confinement."""
    import secrets

    seed = fork.get("seed") or secrets.token_hex(32)
    if fork.get("seed") is None:
        write_file(os.path.join(directory, "fork.json"), json.dumps({"seed": seed}))
    seeded = apply_seed(seed)
    work = os.path.join(directory, "work")
    os.chdir(work)
    for name in ("HOME", "TMPDIR"):
        os.environ[name] = work
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None:
        tempfile.tempdir = None  # type: ignore[attr-defined]  # found again from TMPDIR
    isolation = confine(work)
    gc.freeze()  # what the parent built stays shared: the collector no longer writes to it
    return {"seed": seed, "seeded": seeded, "isolation": isolation, "fresh": fresh}


def apply_seed(seed: str) -> list[str]:
    """The fork's randomness from its seed, as an exec's is: ``random``,
    numpy's global generator when the kernel imported numpy, and
    ``COLLIMATE_SEED`` in its environment (what a cell reads)."""
    import random

    os.environ["COLLIMATE_SEED"] = seed
    random.seed(int(seed, 16))
    seeded = ["random"]
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        with contextlib.suppress(Exception):
            numpy.random.seed(int(seed, 16) % (1 << 32))
            seeded.append("numpy")
    return seeded


def landlock_call(number: int, *args: Any) -> int:
    import ctypes

    call = libc().syscall
    call.restype = ctypes.c_long
    result = int(call(number, *args))
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return result


def confine(directory: str) -> str:
    """Landlock this process and what it will start: it reads the system
    (every top-level dir but /tmp, /proc, /dev, /run, /var, home dirs; a
    few devices), owns ``directory``, opens no TCP socket, and can neither
    signal nor connect to the abstract socket of a process outside its own
    domain (another fork, the parent, the parent's other processes); its
    ptrace-style access to them (``/proc/PID/...``) is refused too. Says
    what it applied, or why not (the kernel has no Landlock, or too old)."""
    import ctypes

    try:
        abi = landlock_call(_W_LANDLOCK_CREATE, None, 0, 1)
    except OSError as exc:
        return f"none: Landlock unavailable ({exc.strerror})"
    if abi < _W_LANDLOCK_MIN_ABI:
        return f"none: Landlock ABI {abi} lacks signal scoping (needs {_W_LANDLOCK_MIN_ABI})"
    attr = struct.pack("QQQ", FS_ALL, NET_TCP, SCOPES)
    ruleset = landlock_call(_W_LANDLOCK_CREATE, ctypes.create_string_buffer(attr, len(attr)), 24, 0)
    try:
        paths = [("/" + e, FS_READ) for e in sorted(os.listdir("/")) if e not in NOT_SHARED]
        paths += [(d, FS_READ | 2) for d in DEVICES] + [(directory, FS_ALL)]
        for path, access in paths:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                if not os.path.isdir(path):
                    access &= FS_FILE
                rule = struct.pack("=Qi", access, fd)
                buffer = ctypes.create_string_buffer(rule, len(rule))
                landlock_call(SYS_ADD_RULE, ruleset, 1, buffer, 0)
            finally:
                os.close(fd)
        if libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS)")
        landlock_call(_W_LANDLOCK_RESTRICT, ruleset, 0)
    finally:
        os.close(ruleset)
    return f"landlock (ABI {abi}): own directory, system read-only, no TCP, scoped signals"


SCOPE_SIGNAL = 2  # Landlock: signals to processes outside the domain refused


def guard() -> str:
    """Keep this process and all it will start (the keeper, the kernel, its
    cells) off every other process of the sandbox: the runner waiting on a
    cell, the exec processes the sandbox keeps ready, other kernels. A
    Landlock domain scoped for signals (Linux 6.12+) refuses signals to
    processes outside it (and, as any domain, ptrace and ``/proc`` access to
    them); a seccomp filter refuses the calls on another process that need
    only the same uid (its rlimits, priority, scheduling; x86_64), unless
    they name the caller as 0. Inside the domain nothing changes: a cell can
    still kill the kernel, its keeper and its own children, and limit
    itself. Says what it applied, and why not the rest."""
    parts = []
    try:
        abi = landlock_call(_W_LANDLOCK_CREATE, None, 0, 1)
    except OSError as exc:
        parts.append(f"no Landlock ({exc.strerror}): cells can signal the sandbox's processes")
        abi = 0
    if abi and abi < _W_LANDLOCK_MIN_ABI:
        parts.append(f"Landlock ABI {abi} cannot scope signals: cells can signal others")
    try:
        no_new_privs()
        if abi >= _W_LANDLOCK_MIN_ABI:
            scope_signals()
            parts.append("signals scoped (Landlock)")
        parts.append(own_process_filter())
    except OSError as exc:
        parts.append(f"unguarded: {exc}")
    return "; ".join(parts)


def no_new_privs() -> None:
    import ctypes

    if libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS)")


def scope_signals() -> None:
    """Enter a Landlock domain that handles no access right, only the
    scoping of signals."""
    import ctypes

    attr = struct.pack("QQQ", 0, 0, SCOPE_SIGNAL)
    ruleset = landlock_call(_W_LANDLOCK_CREATE, ctypes.create_string_buffer(attr, len(attr)), 24, 0)
    try:
        landlock_call(_W_LANDLOCK_RESTRICT, ruleset, 0)
    finally:
        os.close(ruleset)


def own_process_filter() -> str:
    """Install the candidates' filter of the calls on another process of
    the uid (``separation._w_filter``: refused unless they name the caller
    as 0, another system-call ABI killed), without the calls it refuses
    outright (needs no_new_privs)."""
    import ctypes

    if os.uname().machine != "x86_64":
        return f"no seccomp filter for {os.uname().machine}: cells can limit others"
    if not _w_seccomp(libc().syscall, _w_filter(())):
        raise OSError(ctypes.get_errno(), "seccomp")
    return "calls on other processes refused (seccomp)"


def first_to_go() -> None:
    """Make the kernel the sandbox's first victim when memory runs out: it
    holds what the cells allocate, and the runner, the keeper and the
    sandbox's exec processes must outlive it to say what happened."""
    _w_first_to_go()


def write_file(path: str, text: str) -> None:
    with open(path + ".new", "w") as handle:
        handle.write(text)
    os.replace(path + ".new", path)


# --- the runner and the lifecycle -------------------------------------------


def read_int(path: str) -> int | None:
    try:
        with open(path) as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return None


def kill_kernel(directory: str) -> None:
    """Kill the kernel's process group (keeper, kernel, their children).
    The directory's pids are only trusted while they name a kernel or a
    keeper (``ours``): a cell can rewrite them, to the runner's own pid or
    to the sandbox's exec process, say, which this must never kill."""
    pid = read_int(os.path.join(directory, "pid"))
    pgid = read_int(os.path.join(directory, "pgid"))
    if pid is not None and ours(pid):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    if pgid is not None and pgid != os.getpgrp() and group_is_ours(pgid):
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)
    for name in ("pid", "pgid", "address"):
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(directory, name))


def process_stat(pid: int) -> tuple[bytes, int] | None:
    """``(comm, process group)`` of ``pid``, or None (gone, or no such)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    head, _, tail = stat.rpartition(b")")
    fields = tail.split()
    if len(fields) < 3 or fields[0] in (b"Z", b"X"):
        return None
    return head.partition(b"(")[2], int(fields[2])


def ours(pid: int) -> bool:
    """Whether ``pid`` (not this process) is a kernel or a keeper, by name
    (a process can name only itself so: then it is a cell's, and killing it
    costs nobody but the cell)."""
    stat = process_stat(pid) if pid > 1 and pid != os.getpid() else None
    return stat is not None and stat[0] in (KERNEL_NAME, KEEPER_NAME)


def group_is_ours(pgid: int) -> bool:
    """Whether process group ``pgid`` holds a kernel or a keeper: a group
    is made in one session, and a kernel's session is its keeper's, which
    neither the runner nor the sandbox's exec processes can join."""
    if pgid <= 1:
        return False
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = process_stat(int(entry))
            if stat is not None and stat[1] == pgid and stat[0] in (KERNEL_NAME, KEEPER_NAME):
                return True
    return False


def start_kernel(directory: str) -> None:
    """Spawn a kernel in a session of its own and wait for it to listen.
    A spawn refused for want of processes is tried again for a while
    (:data:`SPAWN_RETRY_S`: processes just killed, by a restart after a fork
    bomb, hold the sandbox's process cap until they are reaped); a kernel
    that dies as it starts (memory full), a few times (:data:`START_DEATHS`)."""
    write_file(os.path.join(directory, "started"), "")
    now = time.monotonic()
    deadline, refusals_until = now + START_WAIT_S, now + SPAWN_RETRY_S
    failure, deaths = "no attempt", 0
    while time.monotonic() < deadline and deaths < START_DEATHS:
        try:
            keeper = spawn_keeper(directory)
        except OSError as exc:
            failure = f"{type(exc).__name__}: {exc}"
            if time.monotonic() > refusals_until:
                break
            time.sleep(0.05)
            continue
        while time.monotonic() < deadline:
            if read_int(os.path.join(directory, "pid")) and connectable(directory):
                return
            if keeper.poll() is not None:  # its kernel died (or never was)
                failure = f"the kernel exited as it started (keeper status {keeper.returncode})"
                deaths += 1
                break
            time.sleep(0.02)
        with contextlib.suppress(OSError):
            os.killpg(keeper.pid, signal.SIGKILL)
        keeper.wait()
        time.sleep(0.05)
    raise RuntimeError(f"the kernel did not start ({failure})")


def spawn_keeper(directory: str) -> Any:
    """The kernel's keeper, in a session of its own (its pid is its group's,
    written to ``DIR/pgid``)."""
    import subprocess

    with open(os.path.join(directory, "kernel.log"), "ab") as log:
        keeper = subprocess.Popen(
            [sys.executable, KERNEL_FILE, "serve", directory],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    write_file(os.path.join(directory, "pgid"), str(keeper.pid))
    return keeper


def connect(directory: str) -> socket.socket:
    """A connection to the kernel's abstract socket (OSError: none there)."""
    try:
        with open(os.path.join(directory, "address")) as handle:
            name = handle.read().strip()
    except OSError as exc:
        raise ConnectionRefusedError("no kernel address") from exc
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect("\0" + name)
    except OSError:
        sock.close()
        raise
    return sock


def connectable(directory: str) -> bool:
    try:
        connect(directory).close()
    except OSError:
        return False
    return True


def restart_kernel(directory: str) -> None:
    kill_kernel(directory)
    start_kernel(directory)


def interrupt_kernel(directory: str) -> None:
    """SIGINT to the kernel (only while ``DIR/pid`` names one: see ``ours``)."""
    pid = read_int(os.path.join(directory, "pid"))
    if pid is not None and ours(pid):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGINT)


def empty_result(error_type: str, message: str, started: float) -> dict[str, Any]:
    """The answer to a cell the kernel could not give one for."""
    return {
        "stdout": "",
        "stderr": "",
        "value": None,
        "error": {"type": error_type, "message": message, "traceback": ""},
        "duration_s": time.monotonic() - started,
        "truncated": False,
    }


def run_cell(directory: str, request: dict[str, Any]) -> dict[str, Any]:
    """One cell through the kernel; returns the result dict (with flags).

    A cell the kernel did not take (``converse`` says why: no kernel, one
    that died or could not set the cell up, what an earlier cell left) is
    sent once more to a fresh kernel, so it runs once, and its result says
    ``restarted`` and why. When no kernel can be had, the answer says
    ``unavailable`` and ``not_run``: the SDK then makes one anew."""
    started = time.monotonic()
    existed = os.path.exists(os.path.join(directory, "started"))
    outcome = converse(directory, request, started)
    if not isinstance(outcome, str):
        return outcome
    why = outcome
    failure = fresh_kernel(directory)
    if not failure:
        again = converse(directory, request, started)
        if not isinstance(again, str):
            if existed:
                again["restarted"] = True
                later = f"; {again['note']}" if again.get("note") else ""
                again["note"] = f"{why}; a fresh interpreter ran the cell{later}"
            return again
        failure = again
    result = empty_result("KernelUnavailable", f"{why}; then {failure}", started)
    result.update(unavailable=True, not_run=True)
    return flagged(result, False, existed)


def converse(directory: str, request: dict[str, Any], started: float) -> dict[str, Any] | str:
    """Send the cell to the kernel and wait for its result: the result
    dict, or why the kernel did not take the cell (a string)."""
    pid = read_int(os.path.join(directory, "pid"))
    if pid is None or not ours(pid):  # (a child of a dead kernel may hold its socket)
        return "the interpreter had exited since the last cell"
    try:
        sock = connect(directory)
    except OSError:
        return "the interpreter had exited since the last cell"
    watcher = watch(pid)
    try:
        try:
            send_frame(sock, request)
            if receive(sock, watcher, TAKE_WAIT_S).get("started") is not True:
                raise ValueError("it answered something else")
        except Exception as exc:
            return f"the interpreter could not take the cell ({type(exc).__name__}: {exc})"
        return await_result(directory, sock, watcher, request, started)
    finally:
        sock.close()
        if watcher is not None:
            os.close(watcher)


def watch(pid: int) -> int | None:
    """A pidfd of the kernel (Python 3.9+, Linux 5.3+; else None): the
    runner learns of its death from it, not from its socket closing, which
    the children a cell forked hold open too."""
    try:
        return int(os.pidfd_open(pid))
    except (AttributeError, OSError):
        return None


def receive(sock: socket.socket, watcher: int | None, timeout: float) -> dict[str, Any]:
    """The kernel's next frame, waited for up to ``timeout`` seconds
    (socket.timeout) and no longer than the kernel lives (EOFError)."""
    if watcher is not None:
        ready, _, _ = select.select([sock.fileno(), watcher], [], [], timeout)
        if not ready:
            raise socket.timeout("timed out")  # noqa: UP041 (not TimeoutError before 3.10)
        if sock.fileno() not in ready:
            raise EOFError("the kernel died")
    sock.settimeout(timeout)
    return recv_frame(sock)


def await_result(
    directory: str,
    sock: socket.socket,
    watcher: int | None,
    request: dict[str, Any],
    started: float,
) -> dict[str, Any]:
    """The result of a cell the kernel took: its own, or, when the kernel
    died, ignored the interrupt or answered nonsense, one saying so (the
    kernel replaced)."""
    timeout = float(request["timeout"])
    grace = float(request.get("grace", 2.0))
    cap = int(request.get("output_limit", 65536))
    restarted = timed_out = False
    try:
        try:
            result = clean_answer(receive(sock, watcher, timeout), cap)
        except socket.timeout:  # noqa: UP041 (not TimeoutError before 3.10)
            timed_out = True
            interrupt_kernel(directory)
            try:
                result = clean_answer(receive(sock, watcher, grace), cap)
            except socket.timeout:  # noqa: UP041 (not TimeoutError before 3.10)
                interrupt_kernel(directory)  # a second one, as a user would
                result = clean_answer(receive(sock, watcher, grace), cap)
    except socket.timeout:  # noqa: UP041 (not TimeoutError before 3.10)
        why = f"the cell ignored the interrupt after {timeout:g}s; the kernel was killed"
        if stopped(directory):
            why = f"the interpreter was stopped (SIGSTOP) past {timeout:g}s; it was killed"
        result = lost_cell("KernelRestarted", why, directory, started)
        restarted = True
    except (EOFError, OSError):
        why = "the kernel died while running the cell"
        result = lost_cell("KernelDied", why, directory, started)
        restarted = True
    except Exception as exc:  # a frame no kernel of ours sends: the cell rewrote it
        why = f"the kernel answered nonsense ({type(exc).__name__}: {exc})"
        result = lost_cell("KernelDied", why, directory, started)
        restarted = True
    error = result["error"]
    if timed_out and error and error["type"] == "KeyboardInterrupt":
        error["message"] = f"the cell timed out after {timeout:g}s and was interrupted"
    if result.pop("restart", None):
        # the kernel exits once it answered: the next cell gets a fresh one now
        why = str(result.pop("restart_reason", "") or "")
        failure = fresh_kernel(directory)
        result["note"] = f"{why}; " + (failure or "a fresh interpreter was started")
        restarted = True
        if failure:
            result["unavailable"] = True
    return flagged(result, timed_out, restarted)


def stopped(directory: str) -> bool:
    """Whether the kernel is stopped (a cell sent it SIGSTOP): said to the
    model, which would otherwise read that its cell ignored an interrupt."""
    pid = read_int(os.path.join(directory, "pid"))
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rpartition(b")")[2].split()
    except OSError:
        return False
    return bool(fields) and fields[0] in (b"T", b"t")


def clean_answer(raw: dict[str, Any], cap: int) -> dict[str, Any]:
    """The kernel's answer, rebuilt from the fields of the shapes it sends
    and capped: a cell can rewrite the kernel's code, so what comes over
    the socket is taken as data, never trusted to be well formed."""

    def text(value: Any) -> str:
        return value[:cap] if isinstance(value, str) else ""

    error = raw.get("error")
    duration = raw.get("duration_s")
    answer: dict[str, Any] = {
        "stdout": text(raw.get("stdout")),
        "stderr": text(raw.get("stderr")),
        "value": raw["value"][:cap] if isinstance(raw.get("value"), str) else None,
        "error": None
        if not isinstance(error, dict)
        else {key: text(error.get(key)) for key in ("type", "message", "traceback")},
        "duration_s": float(duration) if isinstance(duration, (int, float)) else 0.0,
        "truncated": raw.get("truncated") is True,
    }
    if raw.get("restart"):
        answer["restart"] = True
        answer["restart_reason"] = text(raw.get("restart"))
    return answer


def lost_cell(error_type: str, why: str, directory: str, started: float) -> dict[str, Any]:
    """The result of a cell whose kernel was lost under it, a fresh one
    started (``unavailable`` when none could be)."""
    failure = fresh_kernel(directory)
    note = failure or "a fresh one was started, and the state is gone"
    result = empty_result(error_type, f"{why}; {note}", started)
    if failure:
        result["unavailable"] = True
    return result


def fresh_kernel(directory: str) -> str:
    """Kill what is left of the kernel and start another: "" once it
    listens, else why not (a process cap still full, say)."""
    try:
        restart_kernel(directory)
    except Exception as exc:
        return f"no kernel could be started ({type(exc).__name__}: {exc})"
    return ""


def flagged(result: dict[str, Any], timed_out: bool, restarted: bool) -> dict[str, Any]:
    result["timed_out"] = timed_out
    result["restarted"] = restarted
    return result


def reinstall(directory: str, program: bytes, seed: str | None) -> None:
    """A kernel made anew in ``directory``, for the SDK when a cell's exec
    gave no answer (the cell deleted the kernel's files, rewrote its
    program, killed or stopped its runner): kill what the directory still
    names, remove it, write the program (and, for a fork, its seed and
    working directory) and start a kernel. Run from the program's text
    (``REINSTALLER``), since the file may be gone."""
    if os.path.isdir(directory) and not os.path.islink(directory):
        kill_kernel(directory)
    remove(directory)
    os.umask(0o077)
    os.mkdir(directory, 0o700)
    with open(os.path.join(directory, "kernel.py"), "wb") as handle:
        handle.write(program)
    if seed:
        os.mkdir(os.path.join(directory, "work"), 0o700)
        write_file(os.path.join(directory, "fork.json"), json.dumps({"seed": seed}))
    start_kernel(directory)


def remove(path: str) -> None:
    """Remove ``path``, whatever it is (a link is removed, not followed)."""
    import shutil

    if os.path.islink(path) or (os.path.lexists(path) and not os.path.isdir(path)):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)


def load_request(argument: str) -> dict[str, Any]:
    if argument.startswith("@"):
        with open(argument[1:], "rb") as handle:
            raw = handle.read()
        os.unlink(argument[1:])
    else:
        raw = argument.encode()
    request: dict[str, Any] = json.loads(binascii.a2b_base64(raw).decode())
    return request


def run(command: str, directory: str, argument: str) -> dict[str, Any]:
    """A runner's answer: the cell's result, or, when the cell could not
    even be read or a first kernel started, one saying it did not run."""
    started = time.monotonic()
    try:
        request = load_request(argument)
        if command == "start-run":
            start_kernel(directory)
    except Exception as exc:
        why = f"the cell did not reach an interpreter ({type(exc).__name__}: {exc})"
        result = empty_result("KernelUnavailable", why, started)
        result.update(unavailable=True, not_run=True)
        return flagged(result, False, False)
    return run_cell(directory, request)


def main(argv: list[str]) -> None:
    command, directory = argv[1], argv[2]
    if command == "serve":
        serve(directory)
    elif command == "start":
        start_kernel(directory)
    elif command == "restart":
        restart_kernel(directory)
    elif command == "stop":
        kill_kernel(directory)
    elif command == "fork":
        sock = connect(directory)
        try:
            send_frame(sock, dict(load_request(argv[3]), op="fork"))
            sock.settimeout(FORK_WAIT_S * 2)
            answer = recv_frame(sock)
        finally:
            sock.close()
        sys.stdout.write(RESULT_PREFIX + json.dumps(answer) + "\n")
    elif command == "ping":  # can this process reach the kernel? (see KernelPlan.probe_code)
        reached = "yes" if connectable(directory) else "no"
        sys.stdout.write(f"@@collimate-kernel-reachable@@ {reached}\n")
    elif command in ("run", "start-run"):  # start-run: a kernel's first cell
        sys.stdout.write(RESULT_PREFIX + json.dumps(run(command, directory, argv[3])) + "\n")
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv)
