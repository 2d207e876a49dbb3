"""The program one SandboxFusion ``/run_code`` request runs as, in one
python exec of the local backend (see
:mod:`collimate_rl.local_backend.sandbox_fusion`).

Never imported by the server: its source is sent as the exec's code, with
one call ``_sf_main("<base64 of the request's JSON>")`` appended. It runs in
the template's warm interpreter, inside the clone's isolation, and plays
the part of SandboxFusion's ``python <file>``:

* the request's ``files`` (base64) and code are written into a fresh
  directory, the code as ``tmp<hex>.py``, which is the working directory;
  a file's absolute name is that path as the code sees it, only where ``/``
  is the clone's own (``request_paths.py``: the language runner's rules
  too); a file that cannot be written is a ``refused`` line instead
  of ``started``;
* the code runs in a process forked from this one, as ``__main__`` of that
  file, with ``stdin`` on fd 0 and stdout and stderr apart (each to a file,
  so they are never mixed), ``memory_limit_MB`` as its address-space
  limit, in a process group of its own;
* after ``run_timeout`` seconds the group is killed (``TimeLimitExceeded``);
* the answer is one line on this exec's output, after a marker. The code
  cannot write that line: its fds are its own files, and this process is
  not dumpable (its ``/proc`` fds are closed to the code's uid). The code's
  process inherits that (making it dumpable again cost 2-7 ms a run,
  measured); it still reads its own ``/proc/self``.

A ``started`` line comes first, before the code's process exists, so the
server can tell a runner that never got going (the backend's fault) from
one the code stopped or killed after it started (the code's doing).
"""

# This file is sent as source to a bare interpreter: standard library only.
from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import signal
import sys
import time
import types

# How a request's paths are placed: the language runner's rules (shared,
# joined in here when shipped).
from .request_paths import _PathRefused, fetch_file, make_image_dirs, write_file

# (the exit status of a ``SystemExit``, as the local backend's python execs)
from .zygote.exit_code import exit_code_of, exit_status

MARK = "\x1ecollimate-sandbox-fusion "
#: At most this much of each of stdout and stderr is returned (16 MiB of
#: exec output carries both, base64-encoded, with room to spare).
OUTPUT_CAP = 5 * 1024 * 1024


def _emit(record: dict[str, object]) -> None:
    os.write(1, (MARK + json.dumps(record) + "\n").encode())


def _read_capped(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            data = fh.read(OUTPUT_CAP)
    except OSError:
        data = b""
    return base64.b64encode(data).decode()


def _run_code(root: str, path: str, source: str, io_paths: list[str], memory_mb: int) -> None:
    """In the forked process: become ``python <path>`` and never return."""
    code = 1
    try:
        os.setpgid(0, 0)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        for target, (name, flags) in enumerate(
            (
                (io_paths[0], os.O_RDONLY),
                (io_paths[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                (io_paths[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
            )
        ):
            fd = os.open(name, flags, 0o600)
            os.dup2(fd, target)
            os.close(fd)
        os.closerange(3, 1 << 16)
        os.chdir(root)
        if memory_mb > 0:
            import resource

            want = memory_mb * 1024 * 1024
            for which in (resource.RLIMIT_AS, resource.RLIMIT_DATA):
                hard = resource.getrlimit(which)[1]
                soft = want if hard == resource.RLIM_INFINITY else min(want, hard)
                resource.setrlimit(which, (soft, hard))
        for stream in (sys.stdout, sys.stderr):
            reconfigure = getattr(stream, "reconfigure", None)
            if reconfigure is not None:
                reconfigure(line_buffering=False)
        main = types.ModuleType("__main__")
        main.__dict__.update({"__file__": path, "__builtins__": __builtins__})
        sys.modules["__main__"] = main
        sys.argv[:] = [path]
        sys.path[0] = root
        code = 0
        try:
            exec(compile(source, path, "exec"), main.__dict__)
        except BaseException as exc:
            code = exit_status(exc)
        try:
            import atexit

            atexit._run_exitfuncs()
        except SystemExit as exc:
            code = exit_code_of(exc)
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
        os._exit(code)


def _sf_main(blob: str) -> None:
    req = json.loads(base64.b64decode(blob))
    base = os.getcwd()
    root = os.path.join(base, f"sandbox-fusion-{os.getpid()}")
    os.mkdir(root, 0o700)
    make_image_dirs()
    try:
        for name, content in req["files"].items():
            write_file(root, name, base64.b64decode(content))
    except _PathRefused as exc:
        # before ``started``: the run could not be set up (the server's
        # answer is SandboxError, never the code's failure)
        _emit({"phase": "refused", "message": f"the request's files: {exc}"})
        return
    path = os.path.join(root, f"tmp{os.urandom(4).hex()}.py")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(req["code"])
    io_paths = [os.path.join(base, f".sf-{os.getpid()}.{n}") for n in ("in", "out", "err")]
    with open(io_paths[0], "wb") as fh:
        fh.write((req["stdin"] or "").encode())
    _emit({"phase": "started"})
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _run_code(root, path, req["code"], io_paths, int(req["memory_limit_MB"]))
    with contextlib.suppress(OSError):
        os.setpgid(pid, pid)  # also here: the group must exist before any killpg
    pidfd = os.pidfd_open(pid)
    ready, _, _ = select.select([pidfd], [], [], float(req["run_timeout"]))
    elapsed = time.monotonic() - started
    timed_out = not ready
    # the code's whole process group, before its leader is reaped (so its
    # pid, the group's id, cannot have been reused)
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    os.close(pidfd)
    files = {}
    for name in req["fetch_files"]:
        data = fetch_file(root, name, OUTPUT_CAP)
        if data is not None:
            files[name] = base64.b64encode(data).decode()
    _emit(
        {
            "phase": "done",
            "timed_out": timed_out,
            "return_code": None if timed_out else os.waitstatus_to_exitcode(status),
            "execution_time": elapsed,
            "stdout": _read_capped(io_paths[1]),
            "stderr": _read_capped(io_paths[2]),
            "files": files,
        }
    )
