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
``restart DIR`` / ``stop DIR`` what they say.

The kernel itself is two processes: a *keeper* (session leader, the
kernel's parent, does nothing but wait) and the *kernel* that executes the
cells in its main thread, so SIGINT lands in the cell as KeyboardInterrupt.
A cell that kills its parent kills only the keeper; one that kills the
kernel (``os._exit``, a signal) is noticed by the runner as a dropped
connection and answered with a fresh kernel and ``restarted``.
"""

from __future__ import annotations

import ast
import base64
import builtins
import codecs
import contextlib
import io
import json
import linecache
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback
from types import FrameType
from typing import Any

RESULT_PREFIX = "@@collimate-kernel-result@@ "
KERNEL_FILE = os.path.abspath(__file__)
START_WAIT_S = 20.0


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
    """The keeper, then (forked) the kernel: listen, run cells one by one."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path = os.path.join(directory, "sock")
    if os.path.exists(path):
        os.unlink(path)
    listener.bind(path)
    listener.listen(4)
    child = os.fork()
    if child:  # the keeper: the kernel's parent, holding nothing
        listener.close()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        os.waitpid(child, 0)
        os._exit(0)
    runner = CellRunner()
    signal.signal(signal.SIGINT, runner.on_sigint)
    # the log kept what a failed start said; from here on, what is written
    # outside a cell (a thread or child it left behind) is dropped, not stored
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)
    write_file(os.path.join(directory, "pid"), str(os.getpid()))
    while True:
        try:
            conn, _ = listener.accept()
        except KeyboardInterrupt:
            continue
        try:
            with conn:
                request = recv_frame(conn)
                send_frame(conn, runner.run(request))
        except BaseException:  # a client gone, a late interrupt: next connection
            if os.getpid() != runner.pid:
                os._exit(0)


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
    for name in ("pid", "pgid", "sock"):
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(directory, name))


def start_kernel(directory: str) -> None:
    """Spawn a kernel in a session of its own and wait for it to listen."""
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


def connectable(directory: str) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(os.path.join(directory, "sock"))
    except OSError:
        return False
    finally:
        probe.close()
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
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(os.path.join(directory, "sock"))
    except OSError:  # no kernel: it died between cells (or never started)
        sock.close()
        restarted = os.path.exists(os.path.join(directory, "pgid"))
        failure = fresh_kernel(directory)
        if failure:
            return flagged(empty_result("KernelUnavailable", failure, started), False, True)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(os.path.join(directory, "sock"))
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
    request: dict[str, Any] = json.loads(base64.b64decode(raw).decode())
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
    elif command == "run":
        result = run_cell(directory, load_request(argv[3]))
        sys.stdout.write(RESULT_PREFIX + json.dumps(result) + "\n")
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv)
