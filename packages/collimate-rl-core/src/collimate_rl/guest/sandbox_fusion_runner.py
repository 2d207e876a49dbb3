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
import sys
import time

# How a request's paths are placed: the language runner's rules (shared,
# joined in here when shipped).
from .forked_python import (
    flush_and_exit,
    fresh_main,
    read_capped,
    reap_group,
    redirect,
    settle,
)
from .request_paths import _PathRefused, fetched_files, request_root

# (the exit status of a ``SystemExit``, as the local backend's python execs)
from .zygote.exit_code import exit_code_of, exit_status

MARK = "\x1ecollimate-sandbox-fusion "
#: At most this much of each of stdout and stderr is returned (16 MiB of
#: exec output carries both, base64-encoded, with room to spare).
OUTPUT_CAP = 5 * 1024 * 1024


def _emit(record: dict[str, object]) -> None:
    os.write(1, (MARK + json.dumps(record) + "\n").encode())


def _read_capped(path: str) -> str:
    return base64.b64encode(read_capped(path, OUTPUT_CAP)).decode()


def _run_code(root: str, path: str, source: str, io_paths: list[str], memory_mb: int) -> None:
    """In the forked process: become ``python <path>`` and never return."""
    code = 1
    try:
        settle(root, memory_mb)
        write = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        for target, (name, flags) in enumerate(
            ((io_paths[0], os.O_RDONLY), (io_paths[1], write), (io_paths[2], write))
        ):
            redirect(target, name, flags)
        os.closerange(3, 1 << 16)
        for stream in (sys.stdout, sys.stderr):
            reconfigure = getattr(stream, "reconfigure", None)
            if reconfigure is not None:
                reconfigure(line_buffering=False)
        main = fresh_main(root, path)
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
        flush_and_exit(code)


def _sf_main(blob: str) -> None:
    req = json.loads(base64.b64decode(blob))
    base = os.getcwd()
    try:
        root = request_root("sandbox-fusion", req["files"])
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
    status = reap_group(pid)
    os.close(pidfd)
    files = fetched_files(root, req["fetch_files"], OUTPUT_CAP)
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
