"""The engine's handle on one warm interpreter (a zygote, see the ``guest`` package).

Started once per (interpreter, preload) pair; asked for clones over its
control socket; restarted by the engine if it ever dies. It is started with
``-I -S`` so the interpreter every clone copies is as small as it can be; the
``sys.path`` the template's interpreter would normally have is handed over
explicitly, so installed packages stay importable without running ``site``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from .channel import Channel, ChannelClosed, Message

ZYGOTE_SCRIPT = str(Path(__file__).with_name("_zygote.py"))
_SYS_PATHS: dict[str, list[str]] = {}
# Root can renice a ready clone back up; without that, keep every process at one priority.
BACKGROUND_NICE = 10 if os.geteuid() == 0 else 0
#: How long a new zygote may take to say hello (its imports and preload done).
#: It starts at normal priority (until it is ready, every clone of its
#: template waits for it) but on a node saturated by other work its start
#: is still slow, and that is not a failure. One that dies is seen at once
#: (its channel closes); this only bounds one alive but stuck.
HELLO_TIMEOUT_S = 120.0
_HOMES: dict[str, list[str]] = {}


def background(pid: int) -> None:
    """Put ``pid`` (and what it forks from now on) behind every normal process.

    Niceness alone is not enough on a small machine: a niced process keeps its
    CPU for up to a scheduler slice when an exec wakes up, and every such
    wake-up is on the latency path. The idle scheduling class is preempted at
    once. Only root may leave it again (a ready clone does), hence root only.
    """
    if not BACKGROUND_NICE:
        return
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, pid, BACKGROUND_NICE)
    with contextlib.suppress(OSError, AttributeError):
        os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0))


class ZygoteError(RuntimeError):
    """The zygote could not start or could not fork a clone."""


async def interpreter_sys_path(python: str) -> list[str]:
    """``sys.path`` of ``python -I`` (site-packages and .pth entries included), cached."""
    if python not in _SYS_PATHS:
        proc = await asyncio.create_subprocess_exec(
            python,
            "-I",
            "-c",
            "import sys, json; print(json.dumps([sys.path, [sys.prefix, sys.base_prefix, "
            "sys.executable]]))",
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
        )
        out, err = await proc.communicate()
        if proc.returncode != 0:
            raise ZygoteError(f"{python}: cannot start: {err.decode(errors='replace').strip()}")
        path, homes = json.loads(out)
        _SYS_PATHS[python] = [p for p in path if p]
        _HOMES[python] = [p for p in homes if p] + [python]
    return _SYS_PATHS[python]


async def interpreter_trees(python: str) -> list[str]:
    """Every host path the interpreter needs at run time (sys.path, prefixes, executable)."""
    return (await interpreter_sys_path(python)) + _HOMES[python]


class ZygoteProcess:
    """A running zygote: ``spawn(spec)`` forks a clone and returns its host pid."""

    def __init__(self, proc: asyncio.subprocess.Process, channel: Channel) -> None:
        self.proc = proc
        self.channel = channel
        self.preload_failed: list[str] = []
        self.python = ""
        # every host path the interpreter needs at run time (see ``exposure``)
        self.trees: list[str] = []
        self._pending: dict[int, asyncio.Future[Message]] = {}
        self._ids = itertools.count(1)
        self._reader = asyncio.ensure_future(self._dispatch())

    @classmethod
    async def start(cls, python: str, preload: tuple[str, ...]) -> ZygoteProcess:
        sys_path = await interpreter_sys_path(python)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            config = {
                "sys_path": sys_path,
                "preload": list(preload),
                "ctl_fd": theirs.fileno(),
                "parent": os.getpid(),
            }
            proc = await asyncio.create_subprocess_exec(
                python,
                "-I",
                "-S",
                ZYGOTE_SCRIPT,
                json.dumps(config),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                pass_fds=[theirs.fileno()],
                cwd="/",
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"},
            )
        finally:
            theirs.close()
        channel = Channel(ours)
        try:
            hello = await asyncio.wait_for(channel.recv(), HELLO_TIMEOUT_S)
        except (ChannelClosed, asyncio.TimeoutError) as exc:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            channel.close()
            raise ZygoteError(f"{python}: the warm interpreter did not start") from exc
        # Only once it is ready: making clones ahead of time must not slow
        # running execs, but its own start is on the path of everything that
        # waits for this template. The idle class during the start starved
        # it for minutes on a node kept busy by other processes.
        background(proc.pid)
        zygote = cls(proc, channel)
        zygote.preload_failed = list(hello.get("preload_failed", []))
        zygote.python = python
        zygote.trees = await interpreter_trees(python)
        return zygote

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None and not self.channel.closed

    async def _dispatch(self) -> None:
        try:
            while True:
                msg = await self.channel.recv()
                fut = self._pending.pop(int(msg.get("req", 0)), None)
                if fut is not None and not fut.done():
                    fut.set_result(msg)
        except ChannelClosed:
            for fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(ZygoteError("the warm interpreter died"))
            self._pending.clear()

    async def spawn(
        self,
        spec: dict[str, Any],
        clone_sock: socket.socket,
        jobs_sock: socket.socket,
        netns_fd: int = -1,
    ) -> int:
        """Fork a clone serving on ``clone_sock`` whose exec children take their
        jobs from ``jobs_sock`` (the zygote gets a copy of both)."""
        req = next(self._ids)
        fut: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._pending[req] = fut
        try:
            fds = [clone_sock.fileno(), jobs_sock.fileno()] + ([netns_fd] if netns_fd >= 0 else [])
            self.channel.send({"op": "clone", "req": req, **spec}, fds)
        except ChannelClosed as exc:
            self._pending.pop(req, None)
            raise ZygoteError("the warm interpreter died") from exc
        reply = await fut
        if reply.get("op") != "cloned":
            raise ZygoteError(f"fork failed: {reply.get('error', reply)}")
        return int(reply["pid"])

    async def close(self) -> None:
        self._reader.cancel()
        self.channel.close()
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGKILL)
        await self.proc.wait()


def default_python() -> str:
    return sys.executable
