"""The exec child: forked ahead of time by its clone (a "standby"), it waits
for one job, runs it and reports.

Before any job exists, as root and in the idle scheduling class it was
forked in, it applies rlimits, closes stray fds, sets up the environment and
takes its copy-on-write faults ahead of time (``warmth.touch_ahead``); then
it takes the server's priority, enters the private root (chroot, while still
root) and drops to the clone's unprivileged uid, and only then waits.
The job comes straight from the engine (no hop through the clone); the child
puts the job's output pipe on fds 1 and 2, writes ``files``, seeds ``random``
and runs the code (or ``/bin/sh -c``).
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import io
import json
import os
import random
import resource
import signal
import socket
import sys
import time
import traceback
import types

from .child_setup import child_env, enter_private_root, prepare_child
from .exit_code import exit_code_of, exit_status
from .kernel import make_undumpable, set_process_name
from .messages import recv
from .twin import ENV as TWIN_ENV
from .twin import WANTED_ENV as TWIN_WANTED_ENV
from .twin import WANTED_FLAG_FD, start_clean_twin, twins_wanted
from .warmth import touch_ahead

TYPE_CHECKING = False
if TYPE_CHECKING:  # never at run time: the zygote stays free of the typing module
    from typing import Any, NoReturn

    Msg = dict[str, Any]

#: The exec child keeps its own fds at the top of its fd table, out of the
#: way of the code's: the fds the code opens get the lowest free numbers and
#: never land on them. The top slot, ``ack``, is ``ACK_FD``, or just under a
#: lower soft ``RLIMIT_NOFILE`` (``top_fd_slot``); the others are counted down
#: from it (``ack - <slot>``). The code finds them open (it may write to
#: them: see ``Reports``), the twin's two through its environment.
ACK_FD = 1000  # ack: the report pipe to the clone (``CloneServer.read_ack``)
#: ``ack - 1``: the jobs socket while the child waits for its job; then the
#: job's report pipe straight to the engine, in the same place
JOBS_SLOT = 1
#: ``ack - 2``: the clean twin's socket (``COLLIMATE_CLEAN_TWIN=<fd>:<pid>``)
TWIN_SLOT = 2
#: ``ack - 3``: the zygote's "twins wanted" byte
#: (``COLLIMATE_CLEAN_TWIN_WANTED=<fd>``); only where ``ack`` is 8 or more
FLAG_SLOT = 3


def write_files(spec: Msg, files: list[list[str]]) -> str | None:
    for path, content in files:
        norm = os.path.normpath(path) if path else ""
        bad = not norm or "\x00" in path or norm in (".", "/")
        if not os.path.isabs(norm):
            bad = bad or norm == ".." or norm.startswith("../")
            target = os.path.join(spec["workdir"], norm)
        else:
            # namespaces: the clone's private root; process mode (NOT a sandbox): the
            # host's, as the server's user (the engine removes them when the clone closes)
            target = norm
        if bad:
            return f"collimate: refusing to write {path!r}: outside the clone\n"
        try:
            parent = os.path.dirname(target)
            if parent:
                os.makedirs(parent, exist_ok=True)
            with open(target, "w", encoding="utf-8") as fh:
                fh.write(content)
        except OSError as exc:
            return f"collimate: cannot write {path!r}: {exc.strerror or exc}\n"
    return None


def exec_child(spec: Msg, jobs_fd: int, ack_w: int, forked_at: float) -> NoReturn:
    """A standby exec child: set up everything that does not depend on the
    job, wait for it, run it, report on ``ack_w`` (see ``CloneServer.read_ack``).

    The job brings a second report pipe, straight to the engine: the same
    seed and end records go there too, so the engine can answer without
    waiting for the clone to relay them (one process wake-up less on every
    exec). The clone's relay stays the authority for a child that dies
    without a record (killed, crashed, or replaced by ``/bin/sh``)."""
    code = 1
    twin_pid = 0
    fork_ms = (time.perf_counter() - forked_at) * 1000
    reports = Reports(ack_w, -1)
    try:
        set_process_name(b"collimate-exec")
        # as root and in the idle class: the standby's preparation is
        # background work (see the end of it)
        prepare_child(spec, None, spec["limits"], enter=False)
        ack, flag = move_to_fd_slots(spec, jobs_fd, ack_w)
        reports = Reports(ack, -1)
        env = prepare_for_any_job(spec)
        confine(spec)
        if flag >= 0 and publish_twins_flag(flag):
            # (forked from here: the twin, and what it runs, start at this
            # frame's depth, as the job's code does; see exec_command)
            twin_pid = start_clean_twin(ack - TWIN_SLOT, close=(ack, ack - JOBS_SLOT, flag))
            os.environ[TWIN_ENV] = f"{ack - TWIN_SLOT}:{twin_pid}"
        msg, out_fd, job_fd = take_job(ack - JOBS_SLOT)
        reports = Reports(ack, ack - JOBS_SLOT, f"F{fork_ms:.3f}\n")
        reports.write(f"R{int(msg['req'])}\n", "")
        output_to(out_fd)
        msg.update(json.loads(read_job_body(job_fd)))
        set_job_env(msg, env)
        write_files_or_exit(spec, msg["files"])
        if msg["kind"] == "command":
            exec_command(msg, env, reports)
        code = run_python(msg, reports)
    except SystemExit as exc:
        code = exit_code_of(exc)
    except BaseException:
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        report_end_and_exit(code, reports, twin_pid)


def top_fd_slot() -> int:
    """The top slot (``ack``, see ``ACK_FD``): under the soft fd limit
    (``dup2`` cannot place an fd at or past it), and never under 4 (the
    slot under it must stay clear of 0-2)."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return max(4, min(ACK_FD, soft - 1)) if soft > 0 else ACK_FD


def move_to_fd_slots(spec: Msg, jobs_fd: int, ack_w: int) -> tuple[int, int]:
    """Put the report pipe and the jobs socket in their slots (and, for a
    template whose execs get clean twins, the twins flag in its own), close
    every other fd above 2 (the clone's and the zygote's: nothing of theirs
    is the code's business), and make the report pipe non-blocking.
    Returns ``(ack, flag)``, ``flag`` -1 when there is none."""
    ack = top_fd_slot()
    jobs = ack - JOBS_SLOT
    os.dup2(ack_w, ack)
    os.dup2(jobs_fd, jobs)
    flag = -1
    if spec.get("clean_twin") and ack >= 8 and WANTED_FLAG_FD >= 0:
        flag = ack - FLAG_SLOT  # the zygote's "twins wanted" byte (see twin.py)
        os.dup2(WANTED_FLAG_FD, flag, inheritable=False)
        os.closerange(3, flag)
        os.closerange(flag + 1, jobs)  # (the twin's slot, free until a twin is forked)
    else:
        os.closerange(3, jobs)
    os.closerange(ack + 1, 1 << 16)
    # a full pipe (code writing to it) must not block the end record
    os.set_blocking(ack, False)
    return ack, flag


def prepare_for_any_job(spec: Msg) -> dict[str, str]:
    """Everything that does not depend on the job, before it comes (off the
    exec's latency path): the environment (but its seed), stdout's line
    buffering, and the copy-on-write faults of the code paths a job takes.
    Returns the environment (a command's ``execve`` gets it)."""
    env = child_env(spec, None)
    for key, value in env.items():  # the zygote started with an empty one
        if os.environ.get(key) != value:
            os.environ[key] = value
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(line_buffering=True)
    touch_ahead()
    return env


def confine(spec: Msg) -> None:
    """Ready: back to the server's priority for the job, into the private
    root, unprivileged, before anything of the job is read."""
    enter_private_root(spec, spec["limits"])
    # nothing else of its uid (a process the code forks included) may read
    # its memory or reach its fds through /proc: the SDK's grader runs the
    # candidate in such a process, and its verdict pipe must stay its own
    make_undumpable()


def publish_twins_flag(flag: int) -> bool:
    """Tell the code where to ask for twins (it writes to the flag, as the
    SDK's grader does); whether code of this template asked yet. If so, a
    clean twin is forked now, before the job: a warm process with nothing of
    the job in it, for the job's use (a grader runs its candidates there)."""
    os.environ[TWIN_WANTED_ENV] = str(flag)
    return twins_wanted(flag)


def take_job(jobs: int) -> tuple[Msg, int, int]:
    """Wait for the job on the jobs socket (slot ``jobs``), then close it:
    the code must never see it (it could steal a later job). The job's
    report pipe to the engine takes its slot, out of the code's way.
    Returns the job's header, its output pipe and its body's memfd; exits
    quietly when the clone closed the socket (no job is coming)."""
    sock = socket.socket(fileno=jobs)
    msg, fds = recv(sock)
    sock.close()
    if msg is None or len(fds) != 3:
        os._exit(0)
    out_fd, job_fd, result_fd = fds
    os.dup2(result_fd, jobs)  # where the jobs socket was: out of the code's way
    os.close(result_fd)
    return msg, out_fd, job_fd


def output_to(out_fd: int) -> None:
    """The job's output pipe as stdout and stderr: one pipe, in order."""
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    os.close(out_fd)


def read_job_body(job_fd: int) -> bytes:
    """The job's body (source, files), which comes in a memfd: no size
    limit on the socket."""
    size = os.fstat(job_fd).st_size
    chunks: list[bytes] = []
    done = 0
    while done < size:
        chunk = os.pread(job_fd, size - done, done)
        if not chunk:
            break
        chunks.append(chunk)
        done += len(chunk)
    os.close(job_fd)
    return b"".join(chunks)


def set_job_env(msg: Msg, env: dict[str, str]) -> None:
    """What the environment only gets with the job: its seed, its CPU."""
    env["COLLIMATE_SEED"] = os.environ["COLLIMATE_SEED"] = msg["seed"]
    if isinstance(msg.get("cpu"), int):
        env["COLLIMATE_CPU"] = os.environ["COLLIMATE_CPU"] = str(msg["cpu"])


def write_files_or_exit(spec: Msg, files: list[list[str]]) -> None:
    """The job's ``files``; a file that cannot be written ends the exec
    (exit 1, said on its output) before any of its code runs."""
    err = write_files(spec, files)
    if err is not None:
        os.write(2, err.encode())
        os._exit(1)


def exec_command(msg: Msg, env: dict[str, str], reports: Reports) -> NoReturn:
    """Replace this process with ``/bin/sh -c`` (without the report pipes:
    the clone's relay reports its end).

    Python code runs from ``exec_child`` itself (``run_python``), never from
    a step under it: the code inherits this call stack, and one frame more
    would be one level of recursion less for it."""
    reports.close()
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    os.execve("/bin/sh", ["/bin/sh", "-c", msg["source"]], env)


def report_end_and_exit(code: int, reports: Reports, twin_pid: int) -> NoReturn:
    """The end: the output flushed and closed first, then the end record,
    so the engine can answer right away; the twin killed (it dies with
    this process anyway); then exit at idle priority."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()
    with contextlib.suppress(OSError):
        # output closed first, then "done": the engine can answer right away
        os.close(1)
        os.close(2)
    reports.write(f"\nE{code & 0xFF}\n")
    if twin_pid:
        with contextlib.suppress(OSError):
            os.kill(twin_pid, signal.SIGKILL)
    # reported: what is left (the exit's teardown) must not compete with
    # the answer on its way (dropping to the idle class needs no privilege)
    with contextlib.suppress(OSError, AttributeError):
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    os._exit(code)


class Reports:
    """An exec child's records, to the clone (``ack``) and straight to the
    engine (``result``). Both stay open while the code runs, which may
    append to them but not undo what was written before it ran (the job's
    number, the seed): what it can fake, an early end, it could as well
    do by exiting."""

    def __init__(self, ack: int, result: int, result_prefix: str = "") -> None:
        self.fds = [ack, result]
        # sent with the first result record: every write wakes the engine
        self.prefix = result_prefix

    def write(self, text: str, result_text: str | None = None) -> None:
        result_text = text if result_text is None else result_text
        if result_text:
            result_text, self.prefix = self.prefix + result_text, ""
        # the engine's first: it answers on it
        for fd, part in ((self.fds[1], result_text), (self.fds[0], text)):
            if fd < 0 or not part:
                continue
            with contextlib.suppress(OSError):  # a reader gone (the exec was killed)
                os.write(fd, part.encode())

    def close(self) -> None:
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds = [-1, -1]


def run_python(msg: Msg, reports: Reports) -> int:
    random.seed(int(msg["seed"], 16))
    reports.write("S" + msg["seed"], "S" + msg["seed"] + "\n")
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main
    sys.argv[:] = ["-c"]
    code = 0
    try:
        exec(compile(msg["source"], "<string>", "exec"), main.__dict__)
    except BaseException as exc:
        code = exit_status(exc)
    try:
        threading = sys.modules.get("threading")
        if threading is not None:
            threading._shutdown()
        atexit._run_exitfuncs()
    except SystemExit as exc:
        code = exit_code_of(exc)
    return code
