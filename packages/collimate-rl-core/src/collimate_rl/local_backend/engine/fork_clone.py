"""A live clone of a warm template, as the engine sees it.

The clone process itself (``guest.clone.CloneServer``) does the forking, killing
and reaping inside its own namespaces; this handle sends jobs (straight to the
clone's standby exec child, on a socket of their own), collects the
output pipe under the cap, enforces the timeout, and guarantees teardown:
after ``close()`` no process of the clone is left, no mount (they lived in its
own mount namespace) and no directory (process mode's working dir is removed).
``release()`` hands a clone back to its engine instead, which may wipe it
(``reset``) and serve the next session or one-shot with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Literal

from .api import ExecJob, ExecOutcome, TemplateSpec
from .channel import Channel, ChannelClosed, Message
from .deadline import within
from .output import OutputCollector
from .zygote_process import background

SeedAck = Literal["verified", "off", "no-ack"]
# how long a clone may take to confirm a kill before it is destroyed outright
KILL_GRACE_S = 5.0
# after SIGKILL, how long close() still waits for the process to be gone (a
# loaded machine can take seconds to tear a namespace down; close() returning
# means the clone's processes are gone)
KILLED_WAIT_S = 30.0
# after the exec exited, how long to wait for stray holders of its output pipe
PIPE_GRACE_S = 0.2


class CloneDied(RuntimeError):
    """The clone process is gone (killed, crashed, or its setup failed)."""


class ForkClone:
    """One clone: a session, or the vehicle of one one-shot exec."""

    def __init__(
        self,
        template: TemplateSpec,
        pid: int,
        channel: Channel,
        *,
        mode: str,  # "ns" (pid 1 of its own namespaces) or "proc"
        host_dir: str | None,
        on_close: Callable[[ForkClone], None],
        jobs: socket.socket,
        uid: int | None = None,
        on_release: Callable[[ForkClone], Awaitable[None]] | None = None,
    ) -> None:
        self.clone_id = "c_" + uuid.uuid4().hex[:16]
        self.endpoints: dict[str, str] = {}
        self.connections_in = 0  # kept by the engine's relay (see api.Clone)
        self.connections_at = 0.0
        self.template = template
        self.pid = pid
        self.mode = mode
        self.host_dir = host_dir
        self._channel = channel
        # jobs go straight to the clone's standby exec child (see ``guest.exec_child``)
        self._jobs = jobs
        jobs.setblocking(False)
        self._on_close = on_close
        self._on_release = on_release
        self.uid = uid  # the unprivileged uid its code runs as (namespaces)
        # may the engine wipe it for another user? (namespaced, no app server)
        self.recyclable = mode == "ns" and template.kind != "app" and on_release is not None
        self.generation = 0  # how many resets it went through
        self.pool_key: tuple[str, bool] = (template.id, False)  # set by the engine
        self._lock = asyncio.Lock()
        self._closed = False
        self._pidfd = -1
        with contextlib.suppress(OSError):
            self._pidfd = os.pidfd_open(pid)
        self._req = 0
        self.created = time.monotonic()
        self.extra_close: list[Callable[[], object]] = []
        self.netns_fd = -1  # its own net namespace, recyclable once the clone is gone
        # process mode writes absolute `files` on the host: removed again at close
        self.host_files: set[str] = set()
        self.exited_cleanly = False
        # where cgroups are in force: how many of its processes the memory quota killed
        self.oom_kills: Callable[[], int] | None = None
        self._oom_seen = 0

    @property
    def closed(self) -> bool:
        return self._closed or self._channel.closed

    async def wait_ready(self, timeout: float) -> None:
        try:
            msg = await within(timeout, self._channel.recv())
        except (ChannelClosed, asyncio.TimeoutError) as exc:
            raise CloneDied("the clone did not come up") from exc
        if msg.get("op") != "ready":
            raise CloneDied(f"clone setup failed: {msg.get('error', msg)}")

    async def run(self, job: ExecJob) -> ExecOutcome:
        async with self._lock:
            if self.closed:
                raise CloneDied("the clone is closed")
            return await self._run(job)

    async def _run(self, job: ExecJob) -> ExecOutcome:
        limits = self.template.limits
        kind = job.kind if self.template.kind != "shell" else "command"
        self._req += 1
        req = self._req
        body = json.dumps({"source": job.source, "files": [list(f) for f in job.files]})
        if self.mode != "ns":
            self.host_files.update(p for p, _ in job.files if os.path.isabs(p))
        job_fd = os.memfd_create("collimate-job", os.MFD_CLOEXEC)
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        result_r, result_w = os.pipe2(os.O_CLOEXEC)
        try:
            _write_all(job_fd, body)
            header: dict[str, object] = {"op": "exec", "req": req, "kind": kind, "seed": job.seed}
            if job.cpu is not None:
                header["cpu"] = job.cpu
            t0 = time.perf_counter()
            if self._channel.closed:
                raise ChannelClosed("control socket closed")
            try:
                socket.send_fds(
                    self._jobs, [json.dumps(header).encode()], [out_w, job_fd, result_w]
                )
            except OSError as exc:
                raise ChannelClosed(str(exc)) from exc
        except BaseException as exc:
            # the job never left: nothing will read these ends
            os.close(out_r)
            os.close(result_r)
            if isinstance(exc, ChannelClosed):
                raise CloneDied("the clone is gone") from exc
            raise
        finally:
            os.close(out_w)
            os.close(result_w)
            os.close(job_fd)
        # the child's own end record, relayed into the channel as if the clone
        # had sent it (whichever comes first answers; the other is skipped)
        direct = DirectResult(result_r, req, self._channel)
        collector = OutputCollector(out_r, limits.output_bytes)
        timed_out = False
        msg: Message | None
        try:
            try:
                msg = await within(job.timeout_s, self._exited(req))
            except asyncio.TimeoutError:
                timed_out = True
                msg = await self._kill_exec(req)
        except BaseException:
            # cancelled (client gone) or the clone died: the tree dies first
            direct.close()
            collector.close()
            with contextlib.suppress(BaseException):
                await asyncio.shield(self._kill_exec(req))
            raise
        exec_ms = (time.perf_counter() - t0) * 1000
        direct.close()
        output, truncated = await collector.finish(0.0 if timed_out else PIPE_GRACE_S)
        fork_ms = float(msg.get("fork_ms", 0.0)) if msg else 0.0
        if timed_out:
            # (if the clone could not confirm the kill it was destroyed: same answer)
            note = f"timeout after {float(job.timeout_s)}s\n".encode()
            if output and not output.endswith(b"\n"):
                note = b"\n" + note
            return ExecOutcome(output + note, -1, True, truncated, fork_ms, exec_ms, "off")
        if msg is None:
            raise CloneDied("the clone died during the exec")
        ack: SeedAck = "verified" if msg.get("seed") == job.seed else "off"
        code = int(msg["exit_code"])
        if code == 128 + signal.SIGKILL and self.oom_kills is not None:
            output += self._oom_note(output)
        return ExecOutcome(output, code, False, truncated, fork_ms, exec_ms, ack)

    def _oom_note(self, output: bytes) -> bytes:
        """Said when an exec died of SIGKILL and the clone's memory quota
        killed a process since the last look (read only then: no cost to
        execs that end otherwise)."""
        assert self.oom_kills is not None
        kills = self.oom_kills()
        if kills <= self._oom_seen:
            return b""
        self._oom_seen = kills
        limit = self.template.limits.memory_bytes
        note = f"collimate: killed by the clone's memory quota ({limit} bytes, all its processes)\n"
        return (b"\n" if output and not output.endswith(b"\n") else b"") + note.encode()

    async def _exited(self, req: int) -> Message:
        while True:
            try:
                msg = await self._channel.recv()
            except ChannelClosed as exc:
                raise CloneDied("the clone is gone") from exc
            if msg.get("op") == "exited" and msg.get("req") == req:
                if msg.get("busy"):
                    raise CloneDied("the clone refused a second concurrent exec")
                return msg

    async def _kill_exec(self, req: int) -> Message | None:
        """Ask the clone to kill its exec's whole tree; destroy the clone if it
        cannot. (One that could may be reused: its reset kills again and
        checks that nothing survived.)"""
        try:
            self._channel.send({"op": "kill", "req": req})
            return await within(KILL_GRACE_S, self._exited(req))
        except (ChannelClosed, asyncio.TimeoutError, CloneDied):
            await self.close()
            return None

    async def release(self) -> None:
        """Done with this clone: the engine wipes and reuses it, or closes it."""
        if self._on_release is None or not self.recyclable or self.closed:
            await self.close()
            return
        await self._on_release(self)

    async def reset(self, uid: int | None, timeout: float) -> bool:
        """Have the clone wipe itself for ``uid`` (see ``guest.clone.CloneServer.reset``):
        True once it says it is ready again; anything else closes it."""
        async with self._lock:
            if self.closed:
                return False
            try:
                self._channel.send({"op": "reset", "uid": uid})
                while True:
                    msg = await within(timeout, self._channel.recv())
                    if msg.get("op") in ("ready", "error"):
                        break
            except (ChannelClosed, asyncio.TimeoutError):
                msg = {"op": "error"}
            if msg.get("op") != "ready":
                await self.close()
                return False
            self.uid = uid
            self.generation += 1
            self.clone_id = "c_" + uuid.uuid4().hex[:16]
            self.created = time.monotonic()
            return True

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # tearing down is background work too: it yields to running execs
        background(self.pid)
        try:
            if self.mode != "ns":
                # the clone kills its own tree (it is their subreaper), then exits
                with contextlib.suppress(ChannelClosed):
                    self._channel.send({"op": "close"})
                if not await self._wait_exit(KILL_GRACE_S):
                    self._sigkill()
                    await self._wait_exit(KILLED_WAIT_S)
            else:
                # pid 1 of its namespace: the kernel takes every process in it along
                self._sigkill()
                self.exited_cleanly = await self._wait_exit(KILL_GRACE_S)
                if not self.exited_cleanly:
                    await self._wait_exit(KILLED_WAIT_S)
        finally:
            self._channel.close()
            self._jobs.close()
            if self._pidfd >= 0:
                os.close(self._pidfd)
                self._pidfd = -1
            for fn in self.extra_close:
                with contextlib.suppress(Exception):
                    fn()
            if self.host_dir:
                shutil.rmtree(self.host_dir, ignore_errors=True)
            for path in self.host_files:
                with contextlib.suppress(OSError):
                    os.unlink(path)
            self._on_close(self)

    def _sigkill(self) -> None:
        with contextlib.suppress(ProcessLookupError, OSError):
            if self._pidfd >= 0:
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            else:
                os.kill(self.pid, signal.SIGKILL)

    async def _wait_exit(self, timeout: float) -> bool:
        if self._pidfd < 0:
            return True
        loop = asyncio.get_running_loop()
        done = loop.create_future()

        def exited() -> None:
            if not done.done():
                done.set_result(None)

        loop.add_reader(self._pidfd, exited)
        try:
            await asyncio.wait_for(done, timeout)
            return True
        except asyncio.TimeoutError:
            return False
        finally:
            loop.remove_reader(self._pidfd)


class DirectResult:
    """Reads an exec child's records straight from it (see ``guest.exec_child``):
    ``F<fork ms>``, ``S<seed>``, then ``E<exit code>`` once its output is
    closed. On the end record it puts an ``exited`` message into the clone's
    channel, the same the clone would relay a moment later."""

    def __init__(self, fd: int, req: int, channel: Channel) -> None:
        self._fd = fd
        self._req = req
        self._channel = channel
        self._buf = b""
        self._loop = asyncio.get_running_loop()
        os.set_blocking(fd, False)
        self._loop.add_reader(fd, self._readable)

    def _readable(self) -> None:
        try:
            data = os.read(self._fd, 4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.close()  # no end record (a shell, a crash): the clone reports it
            return
        self._buf += data
        _head, sep, tail = self._buf.rpartition(b"\nE")
        if not (sep and tail.endswith(b"\n") and tail[:-1].isdigit()):
            return
        fork_ms, seed = 0.0, ""
        for line in self._buf.split(b"\n"):
            if line.startswith(b"F") and not fork_ms:
                with contextlib.suppress(ValueError):
                    fork_ms = float(line[1:])
            elif line.startswith(b"S") and not seed:
                seed = line[1:65].decode("ascii", "replace")
        self.close()
        self._channel.inject(
            {
                "op": "exited",
                "req": self._req,
                "exit_code": int(tail[:-1]),
                "signal": 0,
                "seed": seed,
                "fork_ms": fork_ms,
            }
        )

    def close(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(Exception):
                self._loop.remove_reader(self._fd)
            os.close(self._fd)
            self._fd = -1


def _write_all(fd: int, text: str) -> None:
    data = memoryview(text.encode())
    while data:
        n = os.write(fd, data)
        data = data[n:]
