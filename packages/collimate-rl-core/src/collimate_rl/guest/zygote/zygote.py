"""The zygote: the warm interpreter of a template.

Started once per (interpreter, preload) pair by the engine, it imports the
template's ``preload`` modules and warms up, then serves ``clone`` requests
by ``fork()``, as a microVM control plane forks a warm VM. Clones are reaped
by the kernel (SIGCHLD ignored): the engine talks to them directly.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import marshal
import os
import signal
import socket
import sys
import traceback
import types

from .clone import CloneServer
from .kernel import CLONE_NEWPID, die_with_parent, set_process_name, setns, unshare
from .messages import recv, send
from .warmth import warm_up

TYPE_CHECKING = False
if TYPE_CHECKING:  # never at run time: the zygote stays free of the typing module
    from typing import Any, NoReturn

    Msg = dict[str, Any]


class Zygote:
    """Serves ``clone`` requests from the engine: one fork each."""

    def __init__(self, ctl: socket.socket) -> None:
        self.ctl = ctl
        self.own_pidns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)

    def serve(self) -> NoReturn:
        # Clones are reaped by the kernel: the engine talks to them directly.
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)
        while True:
            msg, fds = recv(self.ctl)
            if msg is None:
                os._exit(0)
            try:
                pid = self.spawn(msg, fds[0], fds[1], fds[2] if len(fds) > 2 else -1)
                send(self.ctl, {"op": "cloned", "req": msg["req"], "pid": pid})
            except OSError as exc:
                send(self.ctl, {"op": "error", "req": msg["req"], "error": str(exc)})
            finally:
                for fd in fds:
                    os.close(fd)

    def spawn(self, spec: Msg, clone_fd: int, jobs_fd: int, netns_fd: int) -> int:
        ns = spec["mode"] == "ns"
        if ns:
            unshare(CLONE_NEWPID, "unshare(pid)")
        try:
            pid = os.fork()
        except BaseException:
            if ns:
                setns(self.own_pidns, CLONE_NEWPID, "setns(pid)")
            raise
        if pid != 0 and ns:
            # back to our own pid namespace for the next fork
            setns(self.own_pidns, CLONE_NEWPID, "setns(pid)")
        if pid == 0:
            code = 70
            try:
                os.close(self.ctl.fileno())
                os.close(self.own_pidns)
                sock = socket.socket(fileno=os.dup(clone_fd))
                jobs = os.dup(jobs_fd)
                os.close(clone_fd)
                os.close(jobs_fd)
                netns = os.dup(netns_fd) if netns_fd >= 0 else -1
                CloneServer(spec, sock, jobs, netns).run()
                code = 0
            except (BrokenPipeError, ConnectionResetError):
                code = 0  # the engine let go of this clone (e.g. closed while it was forming)
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(code)
        return pid


def preload(entry: str) -> None:
    """Import ``entry`` ahead of time: a module name, or ``name=/path/file.py``
    to run that one file as module ``name`` without importing the package
    around it (the SDK's grader runtime: its package would pull in an HTTP
    client, and every page of a bigger zygote is one more to fork)."""
    name, sep, path = entry.partition("=")
    if not sep:
        __import__(name)
        _warm(sys.modules[name])
        return
    code = compiled_in_child(path)
    module = types.ModuleType(name)
    module.__file__ = path
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    except BaseException:
        del sys.modules[name]
        raise
    _warm(module)


def compiled_in_child(path: str) -> types.CodeType:
    """``path`` compiled by a throwaway child, which sends the code object
    back as marshal.

    Why: compiling a big module (the SDK's grader runtime is 150 KB of
    source) leaves megabytes of parser memory in the allocator's heap, freed
    but still mapped. In the zygote those pages would be in every process
    forked from it, down to each candidate of a pack, and every fork copies
    their page-table entries and every exit tears them down. Measured on
    the grader template: 10.6 MB of anonymous memory per fork before, about 7 MB
    after, and packed grading about 9% faster. The child takes the parser's
    memory with it when it exits.

    If the child fails (a syntax error), the source is compiled here, so the
    caller gets the real error.
    """
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            with open(path, "rb") as fh:
                data = marshal.dumps(compile(fh.read(), path, "exec", dont_inherit=True))
            with os.fdopen(write, "wb") as out:
                out.write(data)
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as inp:
        data = inp.read()
    os.waitpid(pid, 0)
    try:
        code = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        code = None
    if isinstance(code, types.CodeType):
        return code
    with open(path, "rb") as fh:
        return compile(fh.read(), path, "exec", dont_inherit=True)


def _warm(module: types.ModuleType) -> None:
    """A preloaded module may ask to be warmed once, here, before any fork:
    ``__collimate_warm__()`` (the SDK's grader runtime loads and warms the
    worker its candidates run in). A failure only costs the warmth."""
    hook = getattr(module, "__collimate_warm__", None)
    if callable(hook):
        with contextlib.suppress(Exception):
            hook()


def _exit(code: object = None) -> NoReturn:
    raise SystemExit(code)


def main() -> None:
    """The zygote's life: configure, preload, warm up, say hello, serve."""
    config = json.loads(sys.argv[1])
    set_process_name(b"collimate-zygote")
    sys.path[:] = config["sys_path"]
    # -S skipped site: give code the two builtins people expect from it
    builtins.exit = builtins.quit = _exit  # type: ignore[assignment]
    die_with_parent(signal.SIGKILL)
    if os.getppid() != config["parent"]:
        os._exit(0)
    failed = []
    for name in config["preload"]:
        try:
            preload(name)
        except Exception as exc:
            failed.append(f"{name}: {exc}")
    warm_up()
    ctl = socket.socket(fileno=config["ctl_fd"])
    send(ctl, {"op": "hello", "pid": os.getpid(), "preload_failed": failed})
    Zygote(ctl).serve()
