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
``fork DIR REQUEST`` have the kernel fork copies of itself (see ``fork_kernels``).

The kernel itself is two processes: a *keeper* (session leader, the
kernel's parent, does nothing but wait) and the *kernel* that executes the
cells in its main thread, so SIGINT lands in the cell as KeyboardInterrupt.
A cell that kills its parent kills only the keeper; one that kills the
kernel (``os._exit``, a signal) is noticed by the runner as a dropped
connection and answered with a fresh kernel and ``restarted``. When the
kernel dies, its keeper removes its files and kills what is left of its
process group, so a dead kernel leaves nothing behind.

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
    from typing import Any

RESULT_PREFIX = "@@collimate-kernel-result@@ "
KERNEL_FILE = os.path.abspath(__file__)
START_WAIT_S = 20.0
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
    (size,) = struct.unpack(">I", recv_exact(sock, 4))
    answer: dict[str, Any] = json.loads(recv_exact(sock, size).decode())
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


class DescriptorCapture:
    """File descriptor ``fd`` (1 or 2) into ``writer`` for one cell: a pipe
    read by a thread, so what a subprocess writes is captured with what
    Python prints, in the order written, and a flood is drained and
    dropped past the cap rather than blocking the cell."""

    def __init__(self, fd: int, writer: CappedWriter) -> None:
        self.fd = fd
        self.writer = writer
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        import threading

        self.done = threading.Event()
        read_end, write_end = os.pipe()
        os.set_blocking(read_end, False)
        self.read_end = read_end
        self.saved = os.dup(fd)
        os.dup2(write_end, fd)
        os.close(write_end)
        self.thread = threading.Thread(target=self.pump, daemon=True)
        self.thread.start()
        self.stream = io.TextIOWrapper(
            io.FileIO(fd, "w", closefd=False),
            encoding="utf-8",
            errors="backslashreplace",
            line_buffering=True,
            write_through=True,
        )

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
        self.thread.join(5)
        self.drain()
        self.writer.write(self.decoder.decode(b"", final=True))
        os.close(self.read_end)


class CellRunner:
    """Executes cells in one namespace, in the main thread."""

    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
        self.count = 0
        self.in_cell = False
        self.pid = os.getpid()

    def on_sigint(self, signum: int, frame: FrameType | None) -> None:
        # an interrupt between cells (a late one) must not hit the machinery
        if self.in_cell:
            raise KeyboardInterrupt

    def compile_cell(self, code: str) -> tuple[Any, Any]:
        import ast
        import linecache

        self.count += 1
        filename = f"<cell {self.count}>"
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        tree = ast.parse(code, filename, "exec")
        last = None
        trailing = tree.body[-1] if tree.body else None
        if isinstance(trailing, ast.Expr):
            tree.body.pop()
            last = ast.Expression(trailing.value)
        body = compile(tree, filename, "exec")
        return body, (compile(last, filename, "eval") if last is not None else None)

    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        cap = int(request.get("output_limit", 65536))
        out, err = CappedWriter(cap), CappedWriter(cap)
        value = error = None
        truncated = False
        started = time.monotonic()
        saved = sys.stdout, sys.stderr
        captures = [DescriptorCapture(1, out), DescriptorCapture(2, err)]
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
            error = describe(exc)
        finally:
            if os.getpid() != self.pid:  # a forked child ending its cell: never answers
                os._exit(0)
            sys.stdout, sys.stderr = saved
            for capture in captures:
                capture.stop()
        return {
            "stdout": out.getvalue(),
            "stderr": err.getvalue(),
            "value": value,
            "error": error,
            "duration_s": time.monotonic() - started,
            "truncated": truncated or out.truncated or err.truncated,
        }


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
        "message": str(exc),
        "traceback": "".join(summary.format()),
    }


def serve(directory: str) -> None:
    """The keeper, then (forked) the kernel: listen, run cells one by one.
    In a fork's directory (``fork.json``) the kernel confines itself first."""
    fork = read_json(os.path.join(directory, "fork.json"))
    child = os.fork()
    if child:  # the keeper: the kernel's parent, holding nothing
        keep(directory, child)
    runner = CellRunner()
    # the address and pid first: a fork's kernel cannot write them once confined
    # (nothing is served before the loop below, so not before that either)
    listener = listen(directory)
    write_file(os.path.join(directory, "pid"), str(os.getpid()))
    if fork is not None:
        become_fork(directory, runner, fork, fresh=True)
    signal.signal(signal.SIGINT, runner.on_sigint)
    # the log kept what a failed start said; from here on, what is written
    # outside a cell (a thread or child it left behind) is dropped, not stored
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)
    serve_loop(directory, listener, runner)


def keep(directory: str, kernel: int) -> None:
    """The keeper's whole life: wait for the kernel, then remove its files
    (those still naming it: a restart may have written new ones) and kill
    what is left of its process group (children of its cells), itself last."""
    set_name(KEEPER_NAME)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        os.waitpid(kernel, 0)
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
    or a request to fork (see ``fork_kernels``)."""
    while True:
        try:
            conn, _ = listener.accept()
        except KeyboardInterrupt:
            continue
        try:
            with conn:
                if peer_uid(conn) != os.getuid():
                    continue
                request = recv_frame(conn)
                if request.get("op") == "fork":
                    send_frame(conn, fork_kernels(directory, listener, conn, runner, request))
                else:
                    send_frame(conn, runner.run(request))
        except BaseException:  # a client gone, a late interrupt: next connection
            if os.getpid() != runner.pid:
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
SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
FS_ALL = (1 << 16) - 1  # every filesystem right up to ABI 5
FS_READ = 1 | 4 | 8  # execute, read file, read dir
FS_FILE = 1 | 2 | 4 | (1 << 14) | (1 << 15)  # the rights a rule on a file may hold
NET_TCP = 1 | 2  # bind, connect
SCOPES = 1 | 2  # abstract unix sockets, signals
LANDLOCK_ABI_NEEDED = 6
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
    runner.pid = os.getpid()
    signal.signal(signal.SIGINT, runner.on_sigint)
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
        abi = landlock_call(SYS_CREATE_RULESET, None, 0, 1)
    except OSError as exc:
        return f"none: Landlock unavailable ({exc.strerror})"
    if abi < LANDLOCK_ABI_NEEDED:
        return f"none: Landlock ABI {abi} lacks signal scoping (needs {LANDLOCK_ABI_NEEDED})"
    attr = struct.pack("QQQ", FS_ALL, NET_TCP, SCOPES)
    ruleset = landlock_call(SYS_CREATE_RULESET, ctypes.create_string_buffer(attr, len(attr)), 24, 0)
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
        landlock_call(SYS_RESTRICT_SELF, ruleset, 0)
    finally:
        os.close(ruleset)
    return f"landlock (ABI {abi}): own directory, system read-only, no TCP, scoped signals"


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
    """Kill the kernel's process group (keeper, kernel, their children)."""
    for name in ("pgid", "pid"):
        pid = read_int(os.path.join(directory, name))
        if pid is None or pid <= 1:
            continue
        for kill in (os.killpg, os.kill):
            with contextlib.suppress(OSError):
                kill(pid, signal.SIGKILL)
    for name in ("pid", "pgid", "address"):
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(directory, name))


def start_kernel(directory: str) -> None:
    """Spawn a kernel in a session of its own and wait for it to listen."""
    import subprocess

    write_file(os.path.join(directory, "started"), "")
    with open(os.path.join(directory, "kernel.log"), "ab") as log:
        keeper = subprocess.Popen(
            [sys.executable, KERNEL_FILE, "serve", directory],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    write_file(os.path.join(directory, "pgid"), str(keeper.pid))
    deadline = time.monotonic() + START_WAIT_S
    while time.monotonic() < deadline:
        if read_int(os.path.join(directory, "pid")) and connectable(directory):
            return
        if keeper.poll() is not None and keeper.returncode != 0:
            break
        time.sleep(0.02)
    raise RuntimeError("the kernel did not start")


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
    pid = read_int(os.path.join(directory, "pid"))
    if pid:
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
    """One cell through the kernel; returns the result dict (with flags)."""
    timeout = float(request["timeout"])
    grace = float(request.get("grace", 2.0))
    started = time.monotonic()
    restarted = False
    try:
        sock = connect(directory)
    except OSError:  # no kernel: it died between cells (or never started)
        restarted = os.path.exists(os.path.join(directory, "started"))
        failure = fresh_kernel(directory)
        if failure:
            return flagged(empty_result("KernelUnavailable", failure, started), False, True)
        sock = connect(directory)
    timed_out = False
    try:
        send_frame(sock, request)
        sock.settimeout(timeout)
        try:
            result = recv_frame(sock)
        except socket.timeout:  # noqa: UP041 (not TimeoutError before 3.10)
            timed_out = True
            interrupt_kernel(directory)
            sock.settimeout(grace)
            try:
                result = recv_frame(sock)
            except socket.timeout:  # noqa: UP041 (not TimeoutError before 3.10)
                interrupt_kernel(directory)  # a second one, as a user would
                result = recv_frame(sock)
    except socket.timeout:  # noqa: UP041 (not TimeoutError before 3.10)
        why = f"the cell ignored the interrupt after {timeout:g}s; the kernel was killed"
        result = empty_result("KernelRestarted", why + restart_note(directory), started)
        restarted = True
    except (EOFError, OSError):
        why = "the kernel died while running the cell"
        result = empty_result("KernelDied", why + restart_note(directory), started)
        restarted = True
    finally:
        sock.close()
    error = result["error"]
    if timed_out and error and error["type"] == "KeyboardInterrupt":
        error["message"] = f"the cell timed out after {timeout:g}s and was interrupted"
    return flagged(result, timed_out, restarted)


def fresh_kernel(directory: str) -> str:
    """Kill what is left of the kernel and start another: "" once it
    listens, else why not (a process cap still full, say)."""
    try:
        restart_kernel(directory)
    except Exception as exc:
        return f"no kernel could be started ({type(exc).__name__}: {exc}); the next run tries again"
    return ""


def restart_note(directory: str) -> str:
    failure = fresh_kernel(directory)
    return "; " + (failure or "a fresh one was started, and the state is gone")


def flagged(result: dict[str, Any], timed_out: bool, restarted: bool) -> dict[str, Any]:
    result["timed_out"] = timed_out
    result["restarted"] = restarted
    return result


def load_request(argument: str) -> dict[str, Any]:
    if argument.startswith("@"):
        with open(argument[1:], "rb") as handle:
            raw = handle.read()
        os.unlink(argument[1:])
    else:
        raw = argument.encode()
    request: dict[str, Any] = json.loads(binascii.a2b_base64(raw).decode())
    return request


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
        if command == "start-run":
            start_kernel(directory)
        result = run_cell(directory, load_request(argv[3]))
        sys.stdout.write(RESULT_PREFIX + json.dumps(result) + "\n")
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv)
