"""The program one SandboxFusion ``/run_jupyter`` request runs as, in one
python exec of the local backend (see
:mod:`collimate_rl.local_backend.sandbox_fusion`).

Never imported by the server: its source is sent as the exec's code, with
one call ``_jupyter_main("<base64 of the request's JSON>")`` appended. It
runs in the template's warm interpreter, inside the clone's isolation
(the clone is the request's alone, and discarded after it), and plays the
part of SandboxFusion's jupyter driver:

* the request's ``files`` are written into a fresh directory, the cells'
  working directory (absolute names as in ``/run_code``: see
  ``request_paths.py``); a file that cannot be written is a ``refused``
  line instead of ``started``;
* the cells run one after another in ONE forked interpreter, the kernel,
  in one namespace (what a cell defines, the next sees, as in a
  notebook), each with its stdout and stderr (descriptors 1 and 2, so a
  subprocess's output is the cell's too) in files of its own. A cell's
  trailing expression is displayed as Jupyter's ``execute_result`` shows
  it (``{"text/plain": repr(value)}``); an exception (``SystemExit``
  too) is the cell's ``error`` (``ename``, ``evalue``, ``traceback``) and
  the next cell runs. ``cell_timeout`` (when above 0) interrupts a cell
  with ``TimeoutError``;
* the kernel's whole process group is killed once ``total_timeout``
  seconds have passed (the request's ``Failed``, as SandboxFusion's driver
  timing out);
* the answer is one line on this exec's output, after a marker, written by
  this process, which the kernel's descriptors do not reach (each cell's
  result comes back over a pipe: a cell that writes there forges only its
  own outputs).
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

# How a request's paths are placed: the language runner's rules, and how a
# cell compiles: the kernel's (shared, joined in here when shipped).
from .cells import compile_cell
from .forked_python import fresh_main, read_capped, reap_group, redirect, settle
from .request_paths import _PathRefused, fetched_files, request_root

TYPE_CHECKING = False
if TYPE_CHECKING:  # never at run time: the guest interpreter imports no typing
    from typing import Any

JUPYTER_MARK = "\x1ecollimate-jupyter "
#: At most this much of each cell's stdout and stderr is returned.
CELL_OUTPUT_CAP = 1024 * 1024
#: At most this much of the cells' results is read from the kernel (a cell
#: flooding the results pipe ends the request instead of filling memory).
RESULTS_CAP = 64 * 1024 * 1024
#: At most this much of one fetched file.
FETCH_CAP = 5 * 1024 * 1024


def _jupyter_emit(record: dict[str, object]) -> None:
    os.write(1, (JUPYTER_MARK + json.dumps(record) + "\n").encode())


def _cell_timed_out(signum: int, frame: object) -> None:
    raise TimeoutError("the cell ran past its cell_timeout")


def _run_cell(
    namespace: dict[str, Any], code: str, index: int, cell_timeout: float
) -> dict[str, Any]:
    """One cell in ``namespace``: what it displayed and the error it raised."""
    import traceback

    display: list[dict[str, str]] = []
    error: list[dict[str, Any]] = []
    try:
        body, last = compile_cell(code, f"<cell {index + 1}>")
        if cell_timeout > 0:
            signal.setitimer(signal.ITIMER_REAL, cell_timeout)
        try:
            exec(body, namespace)
            if last is not None:
                value = eval(last, namespace)
                if value is not None:
                    namespace["_"] = value
                    display.append({"text/plain": repr(value)})
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except BaseException as exc:  # the cell's own failure, SystemExit too
        lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
        error.append({"ename": type(exc).__name__, "evalue": str(exc), "traceback": lines})
    return {"display": display, "error": error}


def _kernel(root: str, req: dict[str, Any], io_base: str, results: int) -> None:
    """In the forked process: run every cell, never return."""
    code = 1
    try:
        settle(root, int(req["memory_limit_MB"]))
        signal.signal(signal.SIGALRM, _cell_timed_out)
        redirect(0, os.devnull, os.O_RDONLY)
        os.closerange(3, results)
        os.closerange(results + 1, 1 << 16)
        main = fresh_main(root, "")
        write = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        for index, cell in enumerate(req["cells"]):
            redirect(1, f"{io_base}.{index}.out", write)
            redirect(2, f"{io_base}.{index}.err", write)
            result = _run_cell(main.__dict__, cell, index, float(req["cell_timeout"]))
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(BaseException):
                    stream.flush()
            os.write(results, (json.dumps(result) + "\n").encode())
        code = 0
    finally:
        os._exit(code)


def _read_text(path: str) -> str:
    return read_capped(path, CELL_OUTPUT_CAP).decode("utf-8", errors="replace")


def _jupyter_main(blob: str) -> None:
    req = json.loads(base64.b64decode(blob))
    base = os.getcwd()
    try:
        root = request_root("jupyter", req["files"])
    except _PathRefused as exc:
        _jupyter_emit({"phase": "refused", "message": f"the request's files: {exc}"})
        return
    io_base = os.path.join(base, f".jupyter-{os.getpid()}")
    read_end, write_end = os.pipe()
    _jupyter_emit({"phase": "started"})
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _kernel(root, req, io_base, write_end)
    os.close(write_end)
    with contextlib.suppress(OSError):
        os.setpgid(pid, pid)
    deadline = started + float(req["total_timeout"])
    buffer = b""
    timed_out = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([read_end], [], [], left)
        if not ready:
            continue
        chunk = os.read(read_end, 65536)
        if not chunk or len(buffer) + len(chunk) > RESULTS_CAP:
            break
        buffer += chunk
    elapsed = time.monotonic() - started
    status = reap_group(pid)
    os.close(read_end)
    cells = []
    lines = buffer.decode("utf-8", errors="replace").splitlines()[: len(req["cells"])]
    for index, line in enumerate(lines):
        try:
            result = json.loads(line)
            display, error = list(result["display"]), list(result["error"])
        except (ValueError, KeyError, TypeError):
            display, error = [], [{"ename": "ValueError", "evalue": "unreadable", "traceback": []}]
        cells.append(
            {
                "stdout": _read_text(f"{io_base}.{index}.out"),
                "stderr": _read_text(f"{io_base}.{index}.err"),
                "display": display,
                "error": error,
            }
        )
    files = fetched_files(root, req["fetch_files"], FETCH_CAP)
    _jupyter_emit(
        {
            "phase": "done",
            "timed_out": timed_out,
            "return_code": None if timed_out else os.waitstatus_to_exitcode(status),
            "execution_time": elapsed,
            "cells": cells,
            "all_cells": len(cells) == len(req["cells"]),
            "files": files,
        }
    )
