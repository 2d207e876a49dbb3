"""The engine: warm zygotes, forked clones, pools of ready clones.

Per template, the engine keeps a warm interpreter (a zygote) and a small pool
of clones already forked from it and already isolated, so a session create or
a one-shot exec takes a ready clone off the pool (the expensive part, making
namespaces and mounts, happened ahead of time, off the request path) and the
exec runs in an exec child the clone forked ahead of time too (already
limited and unprivileged), which takes its job straight from the engine.

A namespaced clone released after its one-shot or session is not thrown
away: it is reset (every process killed, a fresh private root, ipc
namespace and uid; see ``guest.clone``) and goes back to the pool, up to
``keep_idle`` per pool. A fresh clone costs a fork of the warm interpreter,
its namespaces and its copy-on-write faults, several times what a reset
costs, and under a GRPO fan-out that difference is the throughput.

``isolation``:

* ``namespaces``: each clone is pid 1 of its own pid namespace, with its own
  mount namespace (a private root: an overlay whose lower layer is the host
  root, read-only and nosuid, and whose upper layer is the clone's own tmpfs;
  ``/`` belongs to the clone's uid so it may create top-level dirs, while
  host-owned dirs stay unwritable; other host mounts bound read-only; private
  tmpfs ``/tmp``, the working dir, and ``/dev/shm``; its own ``/proc``), ipc and uts
  namespaces, and its own net namespace with only loopback unless the
  template is networked and egress is open. Code runs as a uid of its own.
  Needs root; probed at ``start()`` by really making a clone.
* ``process``: the same warm forks and rlimits, process-group kills with the
  clone as subreaper, and nothing else: NOT a sandbox.
* ``auto``: namespaces when the probe succeeds, else process (and says why).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pwd
import shutil
import socket
import tempfile
from collections import deque
from collections.abc import Mapping
from typing import Any, Literal

from .api import EgressMode, ExecJob, IsolationLevel, Limits, TemplateSpec
from .app_ready import free_loopback_port, wait_ready
from .channel import Channel
from .fork_clone import CloneDied, ForkClone
from .uid_pool import UidPool
from .zygote_process import BACKGROUND_NICE, ZygoteError, ZygoteProcess, default_python

log = logging.getLogger("collimate_rl.local_backend.engine")

IsolationSetting = Literal["auto", "namespaces", "process"]
PoolKey = tuple[str, bool]
CLONE_READY_TIMEOUT_S = 30.0
NETNS_KEEP = 64  # empty net namespaces kept for reuse (making one is the priciest step)

NAMESPACES_DETAIL = (
    "namespaces: per clone its own pid (own /proc), mount, ipc, uts and net namespace "
    "(loopback only unless the template is networked and egress is open); a private root "
    "(overlay: host root file system read-only and nosuid below, the clone's own writes "
    "above, in memory), private tmpfs /tmp (working dir) and /dev/shm; code runs as an "
    "unprivileged uid of its own; rlimits cpu/memory(as)/processes/file size; "
    "timeout kills the whole pid namespace's processes; a clone serves one session or "
    "one-shot at a time and is wiped (every process killed, a new private root, ipc "
    "namespace and uid) before it serves another. Shares the host kernel (not a VM), "
    "no cgroup quotas"
)


def process_detail(reason: str | None) -> str:
    user = pwd.getpwuid(os.geteuid()).pw_name
    text = (
        f"process (NOT a sandbox): code runs as {user} on the host with the host's file "
        "system, network and process table; only rlimits cpu/memory(as)/file size"
        + ("" if os.geteuid() != 0 else " (the process limit is not enforced for root)")
        + " and process-tree kills"
    )
    if reason:
        text += f"; namespaces unavailable: {reason}"
    return text


class ForkEngine:
    """``api.Engine`` over warm zygotes (see module docstring)."""

    def __init__(
        self, isolation: IsolationSetting = "auto", *, pool_size: int = 2, keep_idle: int = 64
    ) -> None:
        if isolation not in ("auto", "namespaces", "process"):
            raise ValueError(f"unknown isolation {isolation!r}")
        self.requested = isolation
        self.isolation: IsolationLevel = "process"
        self.isolation_detail = process_detail(None)
        self.pool_size = max(0, pool_size)
        # ready clones kept per pool, recycled ones included (each holds a
        # couple of MiB of private memory and a uid)
        self.keep_idle = max(self.pool_size, keep_idle)
        self._resetting: dict[PoolKey, int] = {}
        self._zygotes: dict[tuple[str, tuple[str, ...]], ZygoteProcess] = {}
        self._zygote_locks: dict[tuple[str, tuple[str, ...]], asyncio.Lock] = {}
        self._templates: dict[str, TemplateSpec] = {}
        self._pools: dict[PoolKey, deque[ForkClone]] = {}
        self._pool_targets: dict[PoolKey, int] = {}
        self._refills: dict[PoolKey, asyncio.Task[None]] = {}
        self._live: set[ForkClone] = set()
        self._uids = UidPool()
        self._netns_free: list[int] = []
        self._state_dir: str | None = None  # process mode's working dirs, made on first use
        self._closed = False

    # ------------------------------------------------------------ lifecycle

    @property
    def closed(self) -> bool:
        return self._closed

    async def start(self, templates: list[TemplateSpec]) -> None:
        for t in templates:
            self._templates[t.id] = t
        if self.requested != "process":
            reason = await self._probe_namespaces()
            if reason is None:
                self.isolation = "namespaces"
                self.isolation_detail = NAMESPACES_DETAIL
            elif self.requested == "namespaces":
                await self.close()
                raise RuntimeError(f"namespaces isolation unavailable: {reason}")
            else:
                self.isolation_detail = process_detail(reason)
        for t in templates:
            if t.kind == "app":
                if t.warm_pool > 0:
                    self._pool_targets[(t.id, False)] = t.warm_pool
                    self._refill((t.id, False))
            else:
                await self._zygote(t)
                if self.pool_size:
                    key = (t.id, self._own_net(t, None))
                    self._pool_targets[key] = self.pool_size
                    self._refill(key)

    async def close(self) -> None:
        self._closed = True
        for task in self._refills.values():
            task.cancel()
        for task in list(self._refills.values()):
            with contextlib.suppress(BaseException):
                await task
        self._refills.clear()
        for pool in self._pools.values():
            pool.clear()
        await asyncio.gather(*(c.close() for c in list(self._live)), return_exceptions=True)
        for zygote in self._zygotes.values():
            await zygote.close()
        for fd in self._netns_free:
            os.close(fd)
        self._netns_free.clear()
        self._zygotes.clear()
        if self._state_dir is not None:
            shutil.rmtree(self._state_dir, ignore_errors=True)

    # ---------------------------------------------------------------- clones

    async def open_clone(
        self,
        template: TemplateSpec,
        *,
        egress: EgressMode | None,
        env: Mapping[str, str] | None = None,
    ) -> ForkClone:
        if self._closed:
            raise CloneDied("the engine is closed")
        own_net = self._own_net(template, egress)
        if env:
            # its server must start with these variables: a clone of its own
            return await self._spawn(template, own_net, env)
        key = (template.id, own_net)
        pool = self._pools.get(key)
        while pool:
            clone = pool.popleft()
            self._refill(key)
            if not clone.closed:
                return clone
        if key in self._pool_targets:
            self._refill(key)
        return await self._spawn(template, own_net)

    @property
    def state_dir(self) -> str:
        """Where this engine keeps host-side state (process mode's working dirs);
        removed, with everything in it, by ``close()``."""
        return self._host_root()

    def _host_root(self) -> str:
        if self._state_dir is None:
            self._state_dir = tempfile.mkdtemp(prefix="collimate-engine-")  # mode 0700
        return self._state_dir

    def _own_net(self, template: TemplateSpec, egress: EgressMode | None) -> bool:
        """A net namespace of its own (loopback only) unless networked with open egress."""
        if self.isolation != "namespaces":
            return False
        return not (template.networked and egress != "none")

    async def _spawn(
        self, template: TemplateSpec, own_net: bool, env: Mapping[str, str] | None = None
    ) -> ForkClone:
        ns = self.isolation == "namespaces"
        zygote = await self._zygote(template)
        uid = self._uids.take() if ns else None
        host_dir = None if ns else tempfile.mkdtemp(prefix="clone-", dir=self._host_root())
        port = free_loopback_port() if template.kind == "app" else None
        spec: dict[str, Any] = {
            "mode": "ns" if ns else "proc",
            "uid": uid,
            "workdir": "/tmp" if ns else host_dir,
            "own_net": own_net,
            "tmp_bytes": max(64 << 20, template.limits.memory_bytes),
            "expose": zygote.exposures if ns else [],
            "binds": host_mounts() if ns else [],
            # a ready clone runs execs at the server's priority (the zygote is niced)
            "nice": os.getpriority(os.PRIO_PROCESS, 0) if BACKGROUND_NICE else None,
            "limits": _limits_dict(template.limits),
            # python execs get a clean twin (see guest/twin.py): graders use it
            "clean_twin": template.kind == "python",
        }
        if template.kind == "app":
            limits = _limits_dict(template.limits)
            command = (template.app_command or "").replace("{port}", str(port))
            spec["app"] = {"command": command, "limits": limits, "env": dict(env or {})}
        netns_fd = self._netns_free.pop() if ns and own_net and self._netns_free else -1
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        jobs, jobs_theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            pid = await zygote.spawn(spec, theirs, jobs_theirs, netns_fd)
        except BaseException:
            ours.close()
            jobs.close()
            if uid is not None:
                self._uids.give_back(uid)
            if host_dir:
                shutil.rmtree(host_dir, ignore_errors=True)
            raise
        finally:
            theirs.close()
            jobs_theirs.close()
            if netns_fd >= 0:
                os.close(netns_fd)

        def forget(c: ForkClone) -> None:
            self._live.discard(c)
            if c.uid is not None:
                self._uids.give_back(c.uid)
            if c.netns_fd >= 0:
                # reusable only once every process that could hold a socket in it is dead
                if c.exited_cleanly and not self._closed and len(self._netns_free) < NETNS_KEEP:
                    self._netns_free.append(c.netns_fd)
                else:
                    os.close(c.netns_fd)
                c.netns_fd = -1

        clone = ForkClone(
            template,
            pid,
            Channel(ours),
            mode=spec["mode"],
            host_dir=host_dir,
            on_close=forget,
            jobs=jobs,
            uid=uid,
            on_release=self._recycle,
        )
        clone.pool_key = (template.id, own_net)
        self._live.add(clone)
        try:
            await clone.wait_ready(CLONE_READY_TIMEOUT_S)
            if ns and own_net:
                with contextlib.suppress(OSError):
                    clone.netns_fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
            if port is not None:
                guest = str(template.ports[0]) if template.ports else str(port)
                clone.endpoints = {guest: f"127.0.0.1:{port}"}
                ok = await wait_ready(
                    port, template.ready_http, template.ready_timeout_s, lambda: not clone.closed
                )
                if not ok:
                    raise CloneDied(
                        f"app {template.id!r} not ready on port {port} within "
                        f"{template.ready_timeout_s:g}s"
                    )
        except BaseException:
            await clone.close()
            raise
        return clone

    async def _recycle(self, clone: ForkClone) -> None:
        """A released clone: reset it into its pool, or close it when the pool
        is full, the engine is closing, or the reset fails."""
        key = clone.pool_key
        pool = self._pools.setdefault(key, deque())
        if self._closed or len(pool) + self._resetting.get(key, 0) >= self.keep_idle:
            await clone.close()
            return
        old_uid = clone.uid
        new_uid = self._uids.take() if old_uid is not None else None
        self._resetting[key] = self._resetting.get(key, 0) + 1
        try:
            ok = await clone.reset(new_uid, CLONE_READY_TIMEOUT_S)
        finally:
            self._resetting[key] -= 1
        # the uid that is no longer in use: the old one once the reset killed
        # all of its processes, else the new one (the clone closed with the old)
        spare = old_uid if ok else new_uid
        if spare is not None:
            self._uids.give_back(spare)
        if not ok:
            return
        if self.closed:  # close() ran during the reset
            await clone.close()
            return
        pool.append(clone)

    async def _zygote(self, template: TemplateSpec) -> ZygoteProcess:
        python = template.python if template.kind == "python" and template.python else None
        preload = template.preload if template.kind == "python" else ()
        key = (python or default_python(), tuple(preload))
        lock = self._zygote_locks.setdefault(key, asyncio.Lock())
        async with lock:
            zygote = self._zygotes.get(key)
            if zygote is None or not zygote.alive:
                if zygote is not None:
                    await zygote.close()
                zygote = await ZygoteProcess.start(key[0], key[1])
                if zygote.preload_failed:
                    log.warning(
                        "template %s: preload failed: %s",
                        template.id,
                        "; ".join(zygote.preload_failed),
                    )
                self._zygotes[key] = zygote
            return zygote

    def _refill(self, key: PoolKey) -> None:
        task = self._refills.get(key)
        if self._closed or (task is not None and not task.done()):
            return
        if len(self._pools.get(key, ())) >= self._pool_targets.get(key, 0):
            return  # full (recycled clones keep it so): no task to find that out
        self._refills[key] = asyncio.ensure_future(self._refill_loop(key))

    async def _refill_loop(self, key: PoolKey) -> None:
        template = self._templates.get(key[0])
        target = self._pool_targets.get(key, 0)
        if template is None:
            return
        pool = self._pools.setdefault(key, deque())
        try:
            while not self._closed and len(pool) < target:
                clone = await self._spawn(template, key[1])
                if self.closed:  # close() ran while we forked
                    await clone.close()
                    return
                pool.append(clone)
        except (ZygoteError, CloneDied, OSError) as exc:
            log.warning("could not pre-fork a clone of %s: %s", key[0], exc)

    # ----------------------------------------------------------------- probe

    async def _probe_namespaces(self) -> str | None:
        """None when a namespaced clone really works here, else why not."""
        if os.geteuid() != 0:
            return "not running as root"
        probe = TemplateSpec(id="__probe__", kind="shell", limits=Limits(cpu_seconds=5))
        self._templates[probe.id] = probe
        self.isolation = "namespaces"
        try:
            clone = await self._spawn(probe, True)
            try:
                out = await clone.run(ExecJob("command", "echo ok; id -u", "0" * 64, 10.0))
            finally:
                await clone.close()
            lines = out.output.decode(errors="replace").split()
            if out.exit_code != 0 or not lines or lines[0] != "ok" or lines[1:2] == ["0"]:
                return f"probe clone misbehaved: {out.output[:200]!r}"
            return None
        except (ZygoteError, CloneDied, OSError, RuntimeError) as exc:
            return str(exc) or type(exc).__name__
        finally:
            self.isolation = "process"
            self._templates.pop(probe.id, None)


def host_mounts() -> list[str]:
    """Top-level host mount points a clone re-binds (read-only) into its overlay
    root, which by itself only shows the root file system. Not /proc (each clone
    mounts its own) nor /tmp (private)."""
    points: list[str] = []
    try:
        with open("/proc/self/mountinfo") as fh:
            for line in fh:
                point = line.split()[4].replace("\\040", " ")
                if point == "/" or point.startswith(("/proc", "/tmp")):
                    continue
                points.append(point)
    except OSError:
        return []
    top = [p for p in sorted(set(points)) if not any(p.startswith(q + "/") for q in points)]
    return top


def _limits_dict(limits: Limits) -> dict[str, int]:
    return {
        "cpu_seconds": limits.cpu_seconds,
        "memory_bytes": limits.memory_bytes,
        "max_processes": limits.max_processes,
        "file_size_bytes": limits.file_size_bytes,
        "output_bytes": limits.output_bytes,
    }
