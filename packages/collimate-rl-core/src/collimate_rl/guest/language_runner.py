"""The program that compiles and runs code in one language, in one exec of
the local backend's language template (see
:mod:`collimate_rl.local_backend.language_runs`).

Never imported by the server: its source is sent as the exec's code, with
one call ``_lr_main("<base64 of the request's JSON>")`` appended. It runs in
a warm interpreter inside the clone's isolation and does one of two things:

* ``compile``: write the source (and the request's files) into a fresh
  directory, run the toolchain's compile command there, and answer the
  compiler's verdict with what it built (every file under ``build/``);
* ``run``: run the program once per input, each time in a fresh process
  in a directory of its own laid out afresh (the request's files, the
  build or the source, that input's files), with only that input on fd 0,
  stdout and stderr each to a file the runner holds open, and answer one
  record per run.

Each process a step starts is kept apart from the runner (``_confine``,
with :mod:`.separation`'s domain and filter, which this
file is shipped with): it cannot signal, stop or trace the runner, nor
lower its own priority. What a run does to what it was given (its binary,
its directory, the disk) reaches no later run: each is laid out anew, and
a run that cannot be set up once the program has run is the program's
failure, never the server's (``_setup_failed``).

A request's ``files`` and ``fetch_files`` name paths as SandboxFusion does:
a relative name is in the run's directory (the program's working
directory), an absolute one is that path as the program sees it, and only
where ``/`` is the clone's own (a namespaced clone's private root, see
``own_root``): under process isolation ``/`` is the host's, so an absolute
name is refused there. Either way no symlink on a path is followed, /proc,
/sys and /dev (but /dev/shm) are refused, and only regular files are
written or read: a request reaches nothing its sandbox does not own. A
file that cannot be written is the run's setup failing (``start_failed``),
never the program's fault; a fetched path that is not there is left out.

How a run is judged, so that a busy machine never turns a pass into a fail:

* time is the CPU the run used: all its threads, and its children's
  (a run that forks CPU hogs used that CPU), polled while it runs;
  ``RLIMIT_CPU`` one second above is the kernel's backstop;
* a run whose threads all sleep (``pause()``, a sleep, a wait on itself)
  for longer than its time limit is idle: ``time_limit`` too;
* wall time is only a backstop, far above the time limit: a run that
  reaches it having used neither its CPU time nor its idle time waited
  for a CPU most of the time. That is ``starved``, which the server
  answers as its own failure, never as the program's;
* a request may ask that its time limit bound the run's own time too
  (``own_time``): its wall time less the time it waited for a CPU, sleeps
  included, as SandboxFusion's ``run_timeout`` bounds wall time, without
  counting a busy machine against the program;
* memory is what the run really uses, its resident set (the JVM, Go and
  Node reserve gigabytes of address space they never touch, so
  ``RLIMIT_AS`` is not set), polled; a run past ``memory_bytes`` is killed
  (``memory_limit``), and so is one the clone's memory quota killed;
* stdout past ``output_bytes`` is cut by ``RLIMIT_FSIZE`` (``output_limit``);
* the stack may grow as deep as the memory limit (deep recursion is common
  in contest solutions).

After every run, whatever the program started (children, daemons that left
its process group) is killed: this process is their subreaper, so nothing
outlives its run. The answer is one line per record on this exec's output,
after a marker; the program cannot write such a line (its fds are its own
files, and this process is not dumpable).
"""

# This file is sent as source to a bare interpreter: standard library only
# (and no contextlib: a fresh interpreter would import it for this alone).
# ruff: noqa: UP031, SIM105
from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import sys
import time

# (how a request's paths are placed, shared with the SandboxFusion runner)
from .request_paths import _FMT, _REG, _PathRefused, _place, fetch_file, write_file

# Shipped as one module: these imports are where the imported modules' code
# goes (``collimate_rl._guest_source.joined_source``), once each.
from .separation import (
    _W_LANDLOCK_CREATE,
    _W_LANDLOCK_MIN_ABI,
    _W_LANDLOCK_VERSION,
    _W_RET_ALLOW,
    _W_RET_EPERM,
    _W_SECCOMP,
    _w_insn,
    _w_separator,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # never at run time: the guest imports nothing it need not
    from typing import Any

MARK = "\x1ecollimate-language-runner "
#: At most this much of a compiler's or a run's stderr is returned.
STDERR_CAP = 64 * 1024
#: How often a running process's CPU and memory are read (seconds).
POLL_S = 0.01
#: Tasks (processes and threads) of the clone's user a run may bring to:
#: the JVM's threads fit many times over; a fork bomb stops there, so it
#: cannot take the CPU from this process, which must stop it.
RUN_TASKS = 128
#: How often (seconds) everything below the runner is sampled whole (see
#: ``_sample``). By the clock, not by a count of polls: beside a run's many
#: busy processes a poll may come a tenth of a second late (the runner waits
#: for a CPU with them), and ten of them were over a second of spinning.
TREE_S = 0.1
#: An interval between two samples is idle when the run's threads spent
#: less than this share of it on a CPU or waiting for one.
IDLE_BUSY_SHARE = 0.1
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_DUMPABLE = 4
_CLK_TCK = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def _emit(record: dict[str, Any]) -> None:
    os.write(1, (MARK + json.dumps(record) + "\n").encode())


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _prctl(option: int, value: int) -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError, ImportError):
        pass


def _write_files(root: str, files: dict[str, Any]) -> None:
    """The request's files (base64) at their names (see ``write_file``);
    executable when they were (``name`` ends with ``*``)."""
    for name, content in files.items():
        executable = name.endswith("*")
        path = name[:-1] if executable else name
        write_file(root, path, base64.b64decode(content), 0o755 if executable else 0o644)


def _collect(root: str, cap: int) -> dict[str, Any] | None:
    """Every regular file under ``root`` (a build), base64, relative names,
    ``*`` after the executable ones (a symlink is not followed: left out);
    None when they add up to more than ``cap`` bytes."""
    found = {}
    left = cap
    for top, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(top, name)
            rel = os.path.relpath(path, root)
            st = os.lstat(path)
            if st.st_mode & _FMT != _REG:
                continue
            left -= st.st_size
            if left < 0:
                return None
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            with os.fdopen(fd, "rb") as fh:
                found[rel + ("*" if st.st_mode & 0o111 else "")] = _b64(fh.read(st.st_size + 1))
    return found


def _expand(argv: list[str], paths: dict[str, Any]) -> list[str]:
    return [a.format(**paths) for a in argv]


def _environ(tc: dict[str, Any], paths: dict[str, Any]) -> dict[str, Any]:
    """The toolchain's environment, ``{dir}`` and the like filled in; the
    run's directory as home and temporary directory."""
    env = {k: v.format(**paths) for k, v in tc["env"].items()}
    env.update(HOME=paths["dir"], TMPDIR=paths["dir"])
    return env


def _warm_go_cache(env: dict[str, Any]) -> None:
    """Start a Go compile's own build cache from the warm one built on the
    host (``go_cache``: the packages programs import, compiled once); a
    missing seed only costs time."""
    seed = env.pop("COLLIMATE_GO_SEED", None)
    cache = env.get("GOCACHE")
    if not seed or not cache:
        return
    source = os.path.join(seed, "cache")
    if os.path.isdir(source) and not os.path.exists(cache):
        try:
            shutil.copytree(source, cache, symlinks=True)
        except OSError:
            shutil.rmtree(cache, ignore_errors=True)


def _size(fd: int) -> int:
    try:
        return os.fstat(fd).st_size
    except OSError:
        return 0


def _proc_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` (all threads, and children it waited for)."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return -1.0
    # after the name: state is 0, utime 11, stime 12, cutime 13, cstime 14
    return sum(int(x) for x in fields[11:15]) / _CLK_TCK


def _proc_rss(pid: int) -> int:
    try:
        with open("/proc/%d/statm" % pid, "rb") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return -1


def _descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (through each thread's children)."""
    found: list[int] = []
    todo = [pid]
    while todo and len(found) < 4096:
        top = todo.pop()
        found.append(top)
        try:
            for tid in os.listdir("/proc/%d/task" % top):
                with open("/proc/%d/task/%s/children" % (top, tid)) as fh:
                    todo.extend(int(p) for p in fh.read().split())
        except OSError:
            continue
    return found


def _below_cpu() -> float:
    """The CPU seconds of every process below this one (``_sample``'s
    first figure alone, a few reads a process)."""
    me = os.getpid()
    return sum(max(0.0, _proc_cpu(p)) for p in _descendants(me) if p != me)


def _run_delay(pid: int) -> float:
    """Seconds ``pid`` spent runnable but waiting for a CPU."""
    try:
        with open("/proc/%d/schedstat" % pid, "rb") as fh:
            return int(fh.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


class _StartFailed(Exception):
    """The program could not be started (the runner's failure, not its)."""


#: Scheduling calls refused outright to a run's processes (any target, their
#: own included): setpriority, sched_setparam, sched_setscheduler,
#: sched_setattr. A program that lowered its own priority would wait for a
#: CPU behind its busy siblings until the wall-time backstop, and be taken
#: for one the machine starved (the server's failure, not the program's).
_SCHED_CALLS = (141, 142, 144, 314)


def _sched_filter() -> bytes:
    """The classic BPF program refusing ``_SCHED_CALLS`` (x86_64 only, as
    ``separation``'s filter, which this one is stacked on)."""
    ld, jeq, ret = 0x20, 0x15, 0x06
    out = [_w_insn(ld, 0, 0, 0)]  # nr (the arch is checked by the filter below it)
    for nr in _SCHED_CALLS:
        out.append(_w_insn(jeq, 0, 1, nr))
        out.append(_w_insn(ret, 0, 0, _W_RET_EPERM))
    out.append(_w_insn(ret, 0, 0, _W_RET_ALLOW))
    return b"".join(out)


def confinement() -> str | None:
    """None when this kernel can confine a run (a scoped Landlock domain,
    see ``separation``), else why not. Asked once, in the runner."""
    if not sys.platform.startswith("linux") or os.uname().machine != "x86_64":
        return "not Linux on x86_64"
    try:
        import ctypes

        abi = ctypes.CDLL(None, use_errno=True).syscall(
            _W_LANDLOCK_CREATE, None, 0, _W_LANDLOCK_VERSION
        )
    except Exception as exc:  # a guest without ctypes
        return "no ctypes: %s" % exc
    if abi < _W_LANDLOCK_MIN_ABI:
        return "this kernel's Landlock (ABI %d) cannot scope signals" % abi
    return None


def _confine() -> None:
    """Put this (forked, not yet exec'd) process apart from the runner: a
    Landlock domain of its own, scoped, so that nothing it runs can signal,
    stop or trace the runner (or anything else outside it); the
    candidates' seccomp filter, and one more refusing ``_SCHED_CALLS``;
    first to go when memory runs out. Raises when any of it fails: a run
    is never started unconfined where confinement was promised."""
    confine, why = _w_separator()
    if confine is None:
        raise OSError("cannot confine the run: %s" % why)
    import ctypes

    class _Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]

    program = _sched_filter()
    syscall = ctypes.CDLL(None, use_errno=True).syscall
    if syscall(_W_SECCOMP, 1, 0, ctypes.byref(_Prog(len(program) // 8, program))) != 0:
        raise OSError("cannot install the scheduling filter (errno %d)" % ctypes.get_errno())


def _start(
    argv: list[str],
    env: dict[str, str],
    cwd: str,
    io: tuple[int, int, int],
    limits: dict[str, Any],
    confined: bool,
) -> int:
    """Fork and exec ``argv`` with the runner's open files ``io`` as fds
    0-2 (the runner reads the output back through its own descriptors, so
    nothing the program does to the paths can change or block that read),
    ``limits`` and, when ``confined``, apart from the runner (``_confine``).
    An exec that fails says why on a close-on-exec pipe (read here: nothing
    comes once the program runs), so a program that exits 127 is never
    taken for one that did not start."""
    err_r, err_w = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid:
        os.close(err_w)
        why = b""
        while True:
            chunk = os.read(err_r, 4096)
            if not chunk:
                break
            why += chunk
        os.close(err_r)
        if why:
            os.waitpid(pid, 0)
            raise _StartFailed("cannot start %s: %s" % (argv[0], why.decode("utf-8", "replace")))
        return pid
    try:
        import resource

        os.close(err_r)
        os.setpgid(0, 0)
        if err_w < 3:  # (it must outlive the dup2s and the closerange below)
            err_w = os.dup(err_w)
        for target, fd in enumerate(io):
            os.dup2(fd, target)
        os.closerange(3, err_w)
        os.closerange(err_w + 1, 1 << 16)
        os.chdir(cwd)
        for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGXCPU):
            signal.signal(sig, signal.SIG_DFL)
        for which, soft in (
            (resource.RLIMIT_CPU, limits.get("cpu")),
            (resource.RLIMIT_FSIZE, limits.get("fsize")),
            (resource.RLIMIT_STACK, limits.get("stack")),
            (resource.RLIMIT_NPROC, limits.get("nproc")),
        ):
            if soft is None:
                continue
            hard = resource.getrlimit(which)[1]
            if which == resource.RLIMIT_CPU:
                # SIGXCPU at the soft limit, SIGKILL a second later
                if hard != resource.RLIM_INFINITY:
                    soft = min(soft, hard - 1)
                    hard = min(soft + 1, hard)
                else:
                    hard = soft + 1
            elif hard != resource.RLIM_INFINITY:
                soft = min(soft, hard)
            resource.setrlimit(which, (soft, hard))
        if confined:
            _confine()
        os.execve(argv[0], argv, env)
    except BaseException as exc:
        try:
            os.write(err_w, ("%s" % (exc,)).encode() or b"?")
        except BaseException:
            pass
    os._exit(127)


def _kill_leftovers() -> bool:
    """Kill every process this one is the parent of (its runs' children
    and daemons were reparented here), until none is left; False when some
    still were after a few seconds."""
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        kids: set[int] = set()
        try:
            for tid in os.listdir("/proc/self/task"):
                with open("/proc/self/task/%s/children" % tid) as fh:
                    kids.update(int(p) for p in fh.read().split())
        except OSError:
            pass
        if not kids:
            return True
        for pid in kids:
            for kill in (os.killpg, os.kill):
                try:
                    kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                time.sleep(0.001)
                break
    return False


#: Thread states that are not idling: running or runnable, and the
#: uninterruptible wait of a page fault or a disk read on a loaded machine.
_NOT_IDLE = (b"R", b"D")


def _sample() -> tuple[float, bool, float, float, int]:
    """The CPU seconds of every process below this one; whether any of
    their threads is running, waiting for a CPU (state ``R``) or waiting
    in the kernel for the disk or memory (``D``: a busy machine's doing,
    never a sleep the program chose); the
    seconds their threads have spent on a CPU or waiting for one; and of
    those, the seconds spent waiting for one; and how many processes
    there are. Below
    this one, not only below the run's first process: a daemon the run left
    (it is reparented here, the subreaper) spends CPU for it, and a run
    cannot pass the machine's CPU off as taken by others by forking hogs."""
    cpu = busy = waited = 0.0
    runnable = False
    me = os.getpid()
    below = [proc for proc in _descendants(me) if proc != me]
    for proc in below:
        cpu += max(0.0, _proc_cpu(proc))
        try:
            for tid in os.listdir("/proc/%d/task" % proc):
                task = "/proc/%d/task/%s/" % (proc, tid)
                if not runnable:
                    with open(task + "stat", "rb") as fh:
                        runnable = fh.read().rsplit(b")", 1)[1].split()[0] in _NOT_IDLE
                with open(task + "schedstat", "rb") as fh:
                    on_cpu, on_queue = fh.read().split()[:2]
                busy += (int(on_cpu) + int(on_queue)) / 1e9
                waited += int(on_queue) / 1e9
        except (OSError, IndexError, ValueError):
            continue
    return cpu, runnable, busy, waited, len(below)


def _lead_waited(pid: int) -> float:
    """Seconds the first thread of ``pid`` has waited for a CPU (0 when it
    cannot be read): the run's own time is its wall time less this. Not the
    sum over its threads: a Go program's idle runtime threads queue too,
    and their waiting is no time the program was kept from running."""
    try:
        with open("/proc/%d/schedstat" % pid, "rb") as fh:
            return int(fh.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def _watch(
    pid: int,
    cpu_limit: float,
    wall_limit: float,
    memory: int,
    out: int = -1,
    cap: int = 0,
    own_limit: float = 0.0,
) -> dict[str, Any]:
    """Wait for ``pid``, enforcing the limits; its exit and what it used.

    Every TREE_S everything below the runner is sampled (see
    ``_sample``): its CPU, and whether any of its threads could run; while
    the run has more than one process, every poll between reads their CPU
    too (``_below_cpu``), so forking spinners is stopped as soon as one
    spinning process would be. Time
    in which none could (all asleep: ``pause()``, a sleep, waiting on
    itself) is idle time; idle time past the time limit is the program's
    ``time_limit`` too. Time spent runnable but waiting for a CPU is never
    held against it: only past ``wall_limit`` (a backstop far above the
    time limit) is a run that neither used its CPU time nor idled it away
    ``starved``: the machine's doing (a run cannot lower its own priority,
    see ``_SCHED_CALLS``). The file open on ``out`` reaching ``cap`` bytes
    ends it too (a runtime that ignores ``SIGXFSZ``, as the JVM does, would
    write on, failing, forever). ``own_limit`` (when above 0) bounds the
    run's own time, its wall time less the time its first thread waited
    for a CPU (read at each sample): what a clock on the wall would show on
    an idle machine, sleeps included."""
    started = last = time.monotonic()
    cpu = idle = busy = waited = 0.0
    peak = 0
    many = False  # whether the last sample found more than the run's one process
    own_over = False  # whether the last sample found the run past its own-time limit
    lead_waited = 0.0  # seconds the run's first thread waited for a CPU (own_limit only)
    ended = None
    killed = None
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    import select

    while ended is None:
        if pidfd is not None:
            select.select([pidfd], [], [], POLL_S)
        else:
            time.sleep(POLL_S)
        got, status, usage = os.wait4(pid, os.WNOHANG)
        if got:
            ended = (status, usage)
            break
        now = time.monotonic()
        if now - last >= TREE_S:
            tree_cpu, runnable, tree_busy, tree_waited, count = _sample()
            many = count > 1
            cpu = max(cpu, tree_cpu)
            # idle: nothing could run at the sample, and little ran or waited
            # to run since the last (one glance at a thread blocked on a page
            # of a busy machine's disk is not a sleeping program)
            if not runnable and tree_busy - busy < IDLE_BUSY_SHARE * (now - last):
                idle += now - last
            busy = tree_busy
            waited = max(waited, tree_waited)
            last = now
            if own_limit:
                lead_waited = max(lead_waited, _lead_waited(pid))
                own_over = now - started - lead_waited > own_limit
        else:
            cpu = max(cpu, _below_cpu() if many else _proc_cpu(pid))
        rss = _proc_rss(pid)
        peak = max(peak, rss)
        if memory and rss > memory:
            killed = "memory"
        elif cap and _size(out) >= cap:
            killed = "output"
        elif cpu > cpu_limit:
            killed = "cpu"
        elif idle > cpu_limit:
            killed = "idle"
        elif own_over:
            killed = "own"
        elif now - started > wall_limit:
            killed = "wall"
        if killed:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            _got, status, usage = os.wait4(pid, 0)
            ended = (status, usage)
    if pidfd is not None:
        os.close(pidfd)
    status, usage = ended
    wall = time.monotonic() - started
    cpu = max(cpu, usage.ru_utime + usage.ru_stime)
    peak = max(peak, usage.ru_maxrss * 1024)
    return {
        "status": status,
        "cpu": cpu,
        "wall": wall,
        "peak_rss": peak,
        "killed": killed,
        "idle": idle,
        "waited": waited,
        "lead_waited": lead_waited,
    }


def _open_io(root: str, name: str, stdin: bytes = b"") -> tuple[int, int, int]:
    """The runner's own descriptors on a step's stdin (holding ``stdin``),
    stdout and stderr files, made afresh in ``root``."""
    base = os.path.join(root, name)
    made = []
    try:
        fd = os.open(base + ".in", os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        made.append(fd)
        view = memoryview(stdin)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
        for suffix in (".out", ".err"):
            flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
            made.append(os.open(base + suffix, flags, 0o600))
    except BaseException:
        for fd in made:
            os.close(fd)
        raise
    return made[0], made[1], made[2]


def _pread(fd: int, cap: int) -> bytes:
    """At most ``cap`` bytes of the file open on ``fd``, from its start."""
    chunks = []
    at = 0
    try:
        while at < cap:
            chunk = os.pread(fd, min(cap - at, 1 << 20), at)
            if not chunk:
                break
            chunks.append(chunk)
            at += len(chunk)
    except OSError:
        pass
    return b"".join(chunks)


def _close(fds: tuple[int, ...]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _remove(path: str) -> None:
    """``path`` and all under it, whatever modes a run left on it (its
    owner may make any of it writable again); best effort."""

    def again(func: Any, name: str, _exc: Any) -> None:
        try:
            os.chmod(os.path.dirname(name), 0o700)
            if os.path.isdir(name) and not os.path.islink(name):
                os.chmod(name, 0o700)
                shutil.rmtree(name, ignore_errors=True)
            else:
                func(name)
        except OSError:
            pass

    try:
        os.chmod(path, 0o700)
    except OSError:
        pass
    shutil.rmtree(path, onerror=again)


#: A build larger than this is refused (it is kept, sent to every run and
#: answered on the exec's output): the program's compile error.
BUILD_CAP = 64 << 20


def _compile(req: dict[str, Any], root: str, confined: bool) -> None:
    tc = req["toolchain"]
    src = os.path.join(root, tc["source"])
    build = os.path.join(root, "build")
    os.makedirs(build)
    try:
        _write_files(root, req["files"])
    except _PathRefused as exc:
        # the server's failure to set the run up, never the program's
        why = _b64(("the request's files: %s" % (exc,)).encode())
        _emit({"phase": "compiled", "verdict": "start_failed", "output": why})
        return
    with open(src, "w", encoding="utf-8") as fh:
        fh.write(req["source"])
    paths = {"src": src, "build": build, "dir": root}
    io = _open_io(root, ".compile")
    env = _environ(tc, paths)
    _warm_go_cache(env)
    cpu_limit = float(req["cpu_limit"])
    limits = {"cpu": int(cpu_limit) + 1}
    try:
        pid = _start(_expand(tc["compile"], paths), env, root, io, limits, confined)
    except _StartFailed as exc:
        _close(io)
        _emit({"phase": "compiled", "verdict": "start_failed", "output": _b64(str(exc).encode())})
        return
    used = _watch(pid, cpu_limit, float(req["wall_limit"]), 0)
    _kill_leftovers()
    code = os.waitstatus_to_exitcode(used["status"])
    if used["killed"] == "wall" and _starved(used):
        # a compiler waits on nothing (its input is /dev/null): a compile
        # that ran out of wall time waiting for a CPU was kept from running
        verdict = "starved"
    elif used["killed"] in ("wall", "cpu", "idle") or code == -signal.SIGXCPU:
        verdict = "time_limit"
    elif code == 0:
        verdict = "ok"
    else:
        verdict = "error"
    out = _pread(io[1], STDERR_CAP) + _pread(io[2], STDERR_CAP)
    _close(io)
    record = {
        "phase": "compiled",
        "verdict": verdict,
        "return_code": code,
        "output": _b64(out[-STDERR_CAP:]),
        "cpu": used["cpu"],
        "wall": used["wall"],
    }
    if verdict == "ok":
        found = _collect(build, BUILD_CAP)
        if found is None:
            record["verdict"] = "error"
            note = b"\nthe build is larger than %d MiB\n" % (BUILD_CAP >> 20)
            record["output"] = _b64(out[-STDERR_CAP:] + note)
        else:
            record["build"] = found
    _emit(record)


def _decoded(files: dict[str, Any]) -> list[tuple[str, bytes, int]]:
    """A request's files (base64, ``*`` after an executable's name) as
    (name, bytes, mode), decoded once for every run that writes them."""
    out = []
    for name, content in files.items():
        executable = name.endswith("*")
        path = name[:-1] if executable else name
        out.append((path, base64.b64decode(content), 0o755 if executable else 0o644))
    return out


def _lay_out(root: str, files: list[tuple[str, bytes, int]]) -> None:
    for name, data, mode in files:
        write_file(root, name, data, mode)


def _setup_failed(i: int, why: str, ran: bool) -> None:
    """Run ``i`` could not be set up or started. Before any of the
    program's code has run in this exec that is the server's failure
    (``start_failed``); after, it is the program's own (it may have filled
    the disk, or left what stands in the way): a failed run, saying so."""
    if not ran:
        _emit({"phase": "run", "index": i, "limit": "start_failed", "stderr": _b64(why.encode())})
        return
    why += " (after this program's earlier runs in the same sandbox: its own doing)"
    _emit(
        {
            "phase": "run",
            "index": i,
            "limit": None,
            "return_code": None,
            "signal": None,
            "stdout": "",
            "stderr": _b64(why.encode()),
        }
    )


def _run(req: dict[str, Any], root: str, confined: bool) -> None:
    """Each input in a directory of its own, laid out afresh from the
    request (its files, the build, the source), so that nothing a run does
    to what it was given (its binary, its class files, its directory) can
    reach a later run, of this program or of any other: the build the
    compile cache holds is only ever read from this exec's request."""
    tc = req["toolchain"]
    shared = _decoded(req["files"])
    build = _decoded(req.get("build") or {})
    items = []
    for item in req["inputs"]:
        # stdin alone (base64), or {"stdin", "files", "args"}: a checker's
        # input, output and answer as files, named after its command
        if isinstance(item, str):
            item = {"stdin": item}
        items.append(item)
    try:  # every path is checked before anything runs: a refused one is the request's
        for name, _data, _mode in shared + build:
            _place(root, name)
        for item in items:
            for name in item.get("files") or ():
                _place(root, name[:-1] if name.endswith("*") else name)
    except _PathRefused as exc:
        why = "the request's files: %s" % (exc,)
        for i in range(len(items)):
            _setup_failed(i, why, False)
        return
    cpu_limit = float(req["cpu_limit"])
    memory = int(req.get("memory_bytes") or 0)
    output = int(req["output_bytes"])
    limits = {"cpu": int(cpu_limit) + 1, "fsize": output, "stack": memory or None,
              "nproc": RUN_TASKS}  # fmt: skip
    ran = False  # whether any of the program's code has run in this exec
    alive = False  # whether processes it left outlived every kill
    # ``stop_after_failure``: the reward is all or nothing, so the runs after
    # the first failed one cannot change it (and a looper would spend its
    # budget again in each); ``expect``: each run's expected output digest
    # (under ``compare``), or None where only the host can tell
    stop = bool(req.get("stop_after_failure"))
    expect = req.get("expect") or [None] * len(items)
    failed = False
    for i, item in enumerate(items):
        if failed:
            _emit({"phase": "run", "index": i, "limit": "skipped"})
            continue
        if alive:  # (they could reach this run's files)
            _setup_failed(i, "processes an earlier run left could not be stopped", True)
            continue
        here = os.path.join(root, "run-%d" % i)
        paths = {"src": os.path.join(here, tc["source"]), "build": os.path.join(here, "build"),
                 "dir": here}  # fmt: skip
        io: tuple[int, ...] = ()
        _emit({"phase": "begin", "index": i})
        try:
            os.mkdir(here, 0o700)
            os.mkdir(paths["build"], 0o755)
            _lay_out(here, shared)
            _lay_out(paths["build"], build)
            if req.get("source") is not None:
                write_file(here, tc["source"], req["source"].encode("utf-8"), 0o644)
            _lay_out(here, _decoded(item.get("files") or {}))
            io = _open_io(root, ".run-%d" % i, base64.b64decode(item["stdin"]))
        except (OSError, _PathRefused) as exc:
            _close(io)
            _setup_failed(i, "cannot set up this run: %s" % (exc,), ran)
            _remove(here)
            continue
        extra = [os.path.join(here, os.path.normpath(a)) for a in item.get("args") or ()]
        try:
            pid = _start(_expand(tc["run"], paths) + extra, _environ(tc, paths), here,
                         (io[0], io[1], io[2]), limits, confined)  # fmt: skip
        except _StartFailed as exc:
            _close(io)
            _setup_failed(i, str(exc), ran)
            _remove(here)
            continue
        ran = True
        own = cpu_limit if req.get("own_time") else 0.0
        used = _watch(pid, cpu_limit, float(req["wall_limit"]), memory, io[1], output, own)
        alive = not _kill_leftovers()
        code = os.waitstatus_to_exitcode(used["status"])
        killed = _run_limit(used, code, cpu_limit, memory, bool(req.get("own_time")))
        stdout = _pread(io[1], output + 1)
        if killed is None and len(stdout) > output:
            killed = "output_limit"
        stdout = stdout[:output]
        sums = digests(stdout)
        if stop and killed != "starved":
            wrong = expect[i] is not None and sums.get(req.get("compare") or "") != expect[i]
            failed = killed is not None or code != 0 or wrong
        files = {}
        for name in req.get("fetch_files") or ():
            data = fetch_file(here, name, output)
            if data is not None:
                files[name] = _b64(data)
        _emit(
            {
                "phase": "run",
                "index": i,
                "limit": killed,
                "return_code": None if killed else code,
                "signal": -code if code < 0 else None,
                # all of it only up to ``return_stdout``: past that its
                # digests are enough to compare it (the exec's own output is
                # bounded, and a test's right output may be megabytes)
                "stdout": _b64(stdout[: int(req.get("return_stdout", output))]),
                "stdout_size": len(stdout),
                "digests": sums,
                "stderr": _b64(_pread(io[2], STDERR_CAP)),
                "cpu": used["cpu"],
                "wall": used["wall"],
                "peak_rss": used["peak_rss"],
                "idle": used["idle"],
                "waited": used["waited"],
                "ended_by": used["killed"],
                "files": files,
            }
        )
        _close(io)
        _remove(here)


def normal_lines(data: bytes) -> bytes:
    """Output as ``lines`` compares it: CRLF as LF, each line's trailing
    whitespace and the trailing empty lines dropped (``judging.py`` has the
    same rule for the expected output: keep the two alike)."""
    lines = [line.rstrip() for line in data.replace(b"\r\n", b"\n").split(b"\n")]
    while lines and not lines[-1]:
        lines.pop()
    return b"\n".join(lines)


def digests(data: bytes) -> dict[str, str]:
    """SHA-256 of the output as each comparison sees it."""
    import hashlib

    return {
        "exact": hashlib.sha256(data).hexdigest(),
        "lines": hashlib.sha256(normal_lines(data)).hexdigest(),
        "tokens": hashlib.sha256(b" ".join(data.split())).hexdigest(),
    }


#: A step out of wall time was starved (the machine's failure) only when
#: its threads spent at least this share of it waiting for a CPU; otherwise
#: it was neither running nor kept from running: its own doing.
STARVED_WAIT_SHARE = 0.25


def _starved(used: dict[str, Any]) -> bool:
    return bool(used["waited"] >= STARVED_WAIT_SHARE * used["wall"])


def _run_limit(
    used: dict[str, Any], code: int, cpu_limit: float, memory: int, own_time: bool = False
) -> str | None:
    """The limit a run ended on, or None when it ended by itself.
    ``own_time``: the limit bounds the run's own time too (wall time less
    waiting for a CPU, SandboxFusion's ``run_timeout`` made fair to a busy
    machine): a run past it is ``time_limit`` even if it ended by itself
    before a sample caught it."""
    killed = used["killed"]
    if killed == "output":
        return "output_limit"
    if killed == "memory" or (memory and used["peak_rss"] > memory):
        return "memory_limit"
    if killed in ("cpu", "idle", "own") or code == -signal.SIGXCPU:
        return "time_limit"
    if killed == "wall":  # neither its CPU time nor its idle time ran out
        return "starved" if _starved(used) else "time_limit"
    if own_time and used["wall"] - used["lead_waited"] > cpu_limit:
        return "time_limit"
    if code == -signal.SIGXFSZ:
        return "output_limit"
    if code == -signal.SIGKILL and memory and used["peak_rss"] >= memory * 0.75:
        return "memory_limit"  # the clone's memory quota killed it before a poll did
    return None


def _lr_main(blob: str) -> None:
    req = json.loads(base64.b64decode(blob))
    _prctl(_PR_SET_DUMPABLE, 0)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    root = os.path.join(os.getcwd(), "lang-%d" % os.getpid())
    os.mkdir(root, 0o700)
    why = confinement()
    # ``confined``: no run can signal or stop this process (the server
    # reads an exec that outlived its time after a run began by it)
    _emit({"phase": "started", "confined": why is None, "unconfined_why": why})
    if req["op"] == "compile":
        _compile(req, root, why is None)
    else:
        _run(req, root, why is None)
    sys.stdout.flush()
