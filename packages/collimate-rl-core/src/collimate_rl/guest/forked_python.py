"""What the SandboxFusion-compatible runners (``sandbox_fusion_runner.py``
for ``/run_code``, ``jupyter_runner.py`` for ``/run_jupyter``) do alike
around the code they fork: set up the forked process (its own process
group, descriptors on files, the memory limit, a fresh ``__main__``),
read its capped outputs back, and kill and reap its whole group. Each
runner carries this module joined into it.
"""

# This file is sent as source to a bare interpreter: standard library only.
from __future__ import annotations

import contextlib
import os
import signal
import sys
import types


def redirect(fd: int, path: str, flags: int) -> None:
    """Descriptor ``fd`` on ``path`` (opened with ``flags``)."""
    opened = os.open(path, flags, 0o600)
    os.dup2(opened, fd)
    os.close(opened)


def limit_memory(memory_mb: int) -> None:
    """``memory_mb`` (when above 0) as the address-space and data limits,
    never above what the sandbox already allows."""
    if memory_mb <= 0:
        return
    import resource

    want = memory_mb * 1024 * 1024
    for which in (resource.RLIMIT_AS, resource.RLIMIT_DATA):
        hard = resource.getrlimit(which)[1]
        soft = want if hard == resource.RLIM_INFINITY else min(want, hard)
        resource.setrlimit(which, (soft, hard))


def settle(root: str, memory_mb: int) -> None:
    """The forked process's own ground: a process group of its own (what
    the runner kills), SIGPIPE's default, ``root`` as its working
    directory, ``memory_mb`` as its limit."""
    os.setpgid(0, 0)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    os.chdir(root)
    limit_memory(memory_mb)


def fresh_main(root: str, path: str) -> types.ModuleType:
    """A new ``__main__`` for the code (``path`` its file, ``""`` for cells
    with none), with ``root`` first on the import path."""
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = __builtins__
    if path:
        main.__dict__["__file__"] = path
    sys.modules["__main__"] = main
    sys.argv[:] = [path]
    sys.path[0] = root
    return main


def flush_and_exit(code: int) -> None:
    """The forked process's end: what it printed flushed, no cleanup of
    this process's (the runner's) state."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()
    os._exit(code)


def read_capped(path: str, cap: int) -> bytes:
    """At most ``cap`` bytes of ``path`` (nothing when it cannot be read)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(cap)
    except OSError:
        return b""


def reap_group(pid: int) -> int:
    """Kill the process group ``pid`` leads, before reaping its leader (so
    its pid, the group's id, cannot have been reused); the leader's wait
    status."""
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)
    return os.waitpid(pid, 0)[1]
