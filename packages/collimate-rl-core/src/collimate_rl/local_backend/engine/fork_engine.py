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
  mount namespace (a private root holding nothing of the host but its view,
  read-only: system dirs, the interpreter's trees, the template's ``expose``
  paths, a minimal ``/dev``; see ``exposure``; ``/`` itself, ``/tmp`` (the
  working dir) and ``/dev/shm`` are the clone's own, in memory; its own
  ``/proc``), ipc and uts namespaces, and its own net namespace with only
  loopback unless the template is networked and egress is open. Code runs
  as a uid of its own, with no new privileges and a seccomp filter
  (``guest.seccomp``), in a cgroup of its own where cgroups are usable
  (``quotas``). Needs root; probed at ``start()`` by really making a clone.
* ``process``: the same warm forks and rlimits, process-group kills with the
  clone as subreaper, and nothing else: NOT a sandbox.
* ``auto``: namespaces when the probe succeeds, else process (and says why).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import pwd
import shutil
import socket
import tempfile
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from .api import EgressMode, ExecJob, IsolationLevel, Limits, TemplateSpec
from .app_ready import free_loopback_port, wait_ready
from .channel import Channel
from .exposure import host_view
from .fork_clone import CloneDied, ForkClone
from .netns_relay import NetnsRelay
from .quotas import Quotas
from .uid_pool import UidPool
from .zygote_process import (
    BACKGROUND_NICE,
    ZygoteError,
    ZygoteProcess,
    default_python,
    interpreter_trees,
)

log = logging.getLogger("collimate_rl.local_backend.engine")

IsolationSetting = Literal["auto", "namespaces", "process"]
PoolKey = tuple[str, bool]
CLONE_READY_TIMEOUT_S = 30.0
NETNS_KEEP = 64  # empty net namespaces kept for reuse (making one is the priciest step)

NAMESPACES_DETAIL = (
    "namespaces: per clone its own pid (own /proc), mount, ipc, uts and net namespace "
    "(loopback only unless the template is networked and egress is open); a private root "
    "holding nothing of the host but system dirs, the interpreter's own trees and the "
    "paths its template exposes, all read-only (see 'exposed'), with its own / , /tmp "
    "(working dir) and /dev/shm in memory; code runs as an unprivileged uid of its own "
    "with no new privileges{seccomp}; {quotas}; rlimits cpu/memory(as)/processes/file "
    "size; timeout kills the whole pid namespace's processes; a clone serves one session "
    "or one-shot at a time and is wiped (every process killed, a new private root, ipc "
    "namespace and uid) before it serves another. Shares the host kernel (not a VM)"
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
        self,
        isolation: IsolationSetting = "auto",
        *,
        pool_size: int = 2,
        keep_idle: int = 64,
        hidden: Sequence[str] = (),
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
        # app clones in a net namespace of their own, reached through a relay
        self._relays: dict[ForkClone, NetnsRelay] = {}
        # clones handed out from a pool (warm hits) and spawned on demand
        # (misses): what ``/v1/stats`` reports as the warm-hit ratio
        self.pool_hits = 0
        self.pool_misses = 0
        self._uids = UidPool()
        self._netns_free: list[int] = []
        self._state_dir: str | None = None  # process mode's working dirs, made on first use
        self._closed = False
        # host paths no clone may see even under an exposed tree (the server's own files)
        self.hidden = list(hidden)
        self._views: dict[str, dict[str, list[str]]] = {}  # template id -> its view
        self.quotas = Quotas(reason="process isolation")
        # what the probe clone reported of its own confinement
        self.seccomp = "off"
        self.no_new_privs = False

    # ------------------------------------------------------------ lifecycle

    @property
    def closed(self) -> bool:
        return self._closed

    async def start(self, templates: list[TemplateSpec]) -> None:
        for t in templates:
            self._templates[t.id] = t
        if self.requested != "process":
            want_cpu = any(t.limits.cpus for t in templates)
            self.quotas = Quotas.probe(want_cpu) if os.geteuid() == 0 else Quotas(reason="not root")
            reason = await self._probe_namespaces()
            if reason is None:
                self.isolation = "namespaces"
                self.isolation_detail = NAMESPACES_DETAIL.format(
                    seccomp=(
                        ", a seccomp filter (no ptrace, keyrings, bpf, mounts, namespaces, "
                        "kernel modules, kexec, io_uring)"
                        if self.seccomp == "filter"
                        else f", no seccomp filter ({self.seccomp})"
                    ),
                    quotas=(
                        f"{self.quotas.mechanism} quotas per clone (memory of all its "
                        "processes together, processes"
                        + (", CPU bandwidth where a template sets cpus" if self.quotas.cpu else "")
                        + ")"
                        if self.quotas.mechanism != "rlimits"
                        else f"no cgroup quotas ({self.quotas.reason})"
                    ),
                )
            elif self.requested == "namespaces":
                await self.close()
                raise RuntimeError(f"namespaces isolation unavailable: {reason}")
            else:
                self.isolation_detail = process_detail(reason)
            if self.isolation != "namespaces":
                self.quotas.close()
                self.quotas = Quotas(reason="process isolation")
        for t in templates:
            if self.isolation == "namespaces":
                # (an app's zygote is started lazily: its interpreter's trees suffice)
                trees = (
                    await interpreter_trees(default_python())
                    if t.kind == "app"
                    else (await self._zygote(t)).trees
                )
                self._view(t, trees)
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
        self.quotas.close()
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
            self.pool_misses += 1
            return await self._spawn(template, own_net, env)
        key = (template.id, own_net)
        pool = self._pools.get(key)
        while pool:
            clone = pool.popleft()
            self._refill(key)
            if not clone.closed:
                self.pool_hits += 1
                return clone
        if key in self._pool_targets:
            self._refill(key)
        self.pool_misses += 1
        return await self._spawn(template, own_net)

    async def set_warm(self, template: TemplateSpec, count: int) -> None:
        """Keep ``count`` ready clones of ``template`` (one added after
        start, such as a gateway bake) in its pool; clones over a lowered
        target are closed now."""
        self._templates[template.id] = template
        key = (template.id, self._own_net(template, None))
        self._pool_targets[key] = max(0, count)
        pool = self._pools.setdefault(key, deque())
        extra = []
        while len(pool) > max(0, count):
            extra.append(pool.pop())
        await asyncio.gather(*(c.close() for c in extra), return_exceptions=True)
        self._refill(key)

    def pool_counts(self) -> dict[str, int]:
        """Ready clones in every pool now, and the pool hits and misses of
        every clone handed out so far (a clone with its own env is a miss)."""
        return {
            "warm": sum(len(pool) for pool in self._pools.values()),
            "pool_hits": self.pool_hits,
            "pool_misses": self.pool_misses,
        }

    def warm_count(self, template: TemplateSpec) -> int:
        """Ready clones of ``template`` in its pool right now."""
        return len(self._pools.get((template.id, self._own_net(template, None)), ()))

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
        """A new clone of ``template``, forked from its zygote, tracked, and
        ready (its app server answering, for an app template; ``env``: that
        server's own variables). What was set aside for it is given back if
        the fork fails; once the clone exists, closing it gives it back."""
        if template.unavailable:
            raise CloneDied(f"template {template.id!r} is unavailable here: {template.unavailable}")
        ns = self.isolation == "namespaces"
        zygote = await self._zygote(template)
        held = self._hold_for_clone(template, ns)
        spec = self._clone_spec(template, zygote, held, ns, own_net, env)
        pid, control, jobs = await self._fork_clone(zygote, spec, held, ns and own_net)
        clone = self._track_clone(template, own_net, pid, control, jobs, held, spec["mode"])
        await self._until_ready(clone, template, held.port, ns and own_net)
        return clone

    def _hold_for_clone(self, template: TemplateSpec, ns: bool) -> _CloneHold:
        """Set aside what a clone needs before it is forked (see
        ``_CloneHold``); the uid is given back if its cgroup cannot be made."""
        uid = self._uids.take() if ns else None
        host_dir = None if ns else tempfile.mkdtemp(prefix="clone-", dir=self._host_root())
        port = free_loopback_port() if template.kind == "app" else None
        quota, cgroups = "", list[str]()
        if ns:
            try:
                quota, cgroups = self.quotas.make(template.limits, template.limits.cpus)
            except OSError as exc:
                if uid is not None:
                    self._uids.give_back(uid)
                raise CloneDied(f"cannot make the clone's cgroup: {exc}") from exc
        return _CloneHold(uid, host_dir, port, quota, cgroups)

    def _clone_spec(
        self,
        template: TemplateSpec,
        zygote: ZygoteProcess,
        held: _CloneHold,
        ns: bool,
        own_net: bool,
        env: Mapping[str, str] | None,
    ) -> dict[str, Any]:
        """What the zygote is told to make (``guest.clone`` reads it): the
        clone's mode, uid, working dir, view of the host, cgroups, priority,
        limits, and for an app template the server it starts."""
        spec: dict[str, Any] = {
            "mode": "ns" if ns else "proc",
            "uid": held.uid,
            "workdir": "/tmp" if ns else held.host_dir,
            "own_net": own_net,
            "tmp_bytes": max(64 << 20, template.limits.memory_bytes),
            "view": self._view(template, zygote.trees) if ns else {},
            "cgroups": held.cgroups,
            # a ready clone runs execs at the server's priority (the zygote is niced)
            "nice": os.getpriority(os.PRIO_PROCESS, 0) if BACKGROUND_NICE else None,
            "limits": asdict(template.limits),
            # python execs get a clean twin (see guest/zygote/twin.py): graders use it
            "clean_twin": template.kind == "python",
            "env": dict(template.env),
        }
        if template.kind == "app":
            limits = asdict(template.limits)
            command = (template.app_command or "").replace("{port}", str(held.port))
            spec["app"] = {"command": command, "limits": limits, "env": dict(env or {})}
        return spec

    async def _fork_clone(
        self, zygote: ZygoteProcess, spec: dict[str, Any], held: _CloneHold, reuse_netns: bool
    ) -> tuple[int, socket.socket, socket.socket]:
        """Have the zygote fork the clone, with a recycled empty net namespace
        when ``reuse_netns`` and one is free (making one is the priciest
        step). Returns its pid and the engine's ends of its control socket
        and of its jobs socket (see ``ForkClone``); the clone's ends, and the
        namespace, are closed here either way. A failed fork gives back what
        was held for it."""
        netns_fd = self._netns_free.pop() if reuse_netns and self._netns_free else -1
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        jobs, jobs_theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            pid = await zygote.spawn(spec, theirs, jobs_theirs, netns_fd)
        except BaseException:
            ours.close()
            jobs.close()
            self._give_back(held)
            raise
        finally:
            theirs.close()
            jobs_theirs.close()
            if netns_fd >= 0:
                os.close(netns_fd)
        return pid, ours, jobs

    def _give_back(self, held: _CloneHold) -> None:
        """What was held for a clone whose fork failed: its uid, its cgroup,
        its host working dir."""
        if held.uid is not None:
            self._uids.give_back(held.uid)
        if held.quota:
            self.quotas.remove(held.quota)
        if held.host_dir:
            shutil.rmtree(held.host_dir, ignore_errors=True)

    def _track_clone(
        self,
        template: TemplateSpec,
        own_net: bool,
        pid: int,
        control: socket.socket,
        jobs: socket.socket,
        held: _CloneHold,
        mode: str,
    ) -> ForkClone:
        """The engine's handle on a forked clone: among the live clones (the
        engine's ``close()`` closes them) until it closes (``_forget``),
        recycled into its pool when released (``_recycle``)."""
        quota = held.quota
        clone = ForkClone(
            template,
            pid,
            Channel(control),
            mode=mode,
            host_dir=held.host_dir,
            on_close=functools.partial(self._forget, quota),
            jobs=jobs,
            uid=held.uid,
            on_release=self._recycle,
        )
        clone.pool_key = (template.id, own_net)
        if quota:
            clone.oom_kills = lambda: self.quotas.oom_kills(quota)
        self._live.add(clone)
        return clone

    def _forget(self, quota: str, c: ForkClone) -> None:
        """A closed clone: no longer live; its cgroup removed, its uid given
        back, its relay (an app in a net namespace of its own) cut, its net
        namespace kept for another clone when nothing can hold a socket in it
        any more (else closed)."""
        self._live.discard(c)
        relay = self._relays.pop(c, None)
        if relay is not None:
            relay.close()  # before its net namespace may go to another clone
        if quota:
            self.quotas.remove(quota)
        if c.uid is not None:
            self._uids.give_back(c.uid)
        if c.netns_fd >= 0:
            # reusable only once every process that could hold a socket in it is dead
            if c.exited_cleanly and not self._closed and len(self._netns_free) < NETNS_KEEP:
                self._netns_free.append(c.netns_fd)
            else:
                os.close(c.netns_fd)
            c.netns_fd = -1

    async def _until_ready(
        self, clone: ForkClone, template: TemplateSpec, port: int | None, keep_netns: bool
    ) -> None:
        """Wait for the clone to say it is ready; keep a handle on its own net
        namespace (``keep_netns``), to reuse once it is gone; then, for an
        app, wait for its server to answer on ``port`` (through a relay into
        that namespace when it has one: see ``netns_relay``). A clone that
        does not come up is closed (which gives back what it held)."""
        try:
            await clone.wait_ready(CLONE_READY_TIMEOUT_S)
            if keep_netns:
                with contextlib.suppress(OSError):
                    clone.netns_fd = os.open(
                        f"/proc/{clone.pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC
                    )
            if port is not None:
                if keep_netns:
                    await self._relay_into(clone, port)
                await _until_app_answers(clone, template, port)
        except BaseException:
            await clone.close()
            raise

    async def _relay_into(self, clone: ForkClone, port: int) -> None:
        """The host's ``127.0.0.1:port`` relayed to the same port in the app
        clone's own net namespace (its server cannot reach out; we reach in)."""
        if clone.netns_fd < 0:
            raise CloneDied("cannot open the app clone's net namespace to relay its port")
        relay = NetnsRelay(clone.netns_fd, port, port, functools.partial(_count_in, clone))
        await relay.start()
        if clone.closed:  # closed while the relay started: nothing to serve
            relay.close()
            raise CloneDied("the app clone died before its port could be relayed")
        self._relays[clone] = relay

    def _view(self, template: TemplateSpec, trees: list[str]) -> dict[str, list[str]]:
        """What of the host a clone of ``template`` sees (computed once)."""
        view = self._views.get(template.id)
        if view is None:
            view = host_view(trees, template.expose, self.hidden)
            if view["missing"]:
                log.warning(
                    "template %s: exposed paths missing on this host: %s",
                    template.id,
                    ", ".join(view["missing"]),
                )
            self._views[template.id] = view
        return view

    def confinement(self) -> dict[str, Any]:
        """What the banner and ``/v1/health`` report beyond the isolation
        level: the host paths each template's clones see, the quotas, the
        syscall filter."""
        if self.isolation != "namespaces":
            return {
                "exposed": "everything (process isolation)",
                "quotas": self.quotas.describe(),
            }
        exposed: dict[str, Any] = {}
        for tid, view in sorted(self._views.items()):
            if tid.startswith("__"):
                continue
            exposed[tid] = {
                "read_only": view["binds"] + ["/dev (null, zero, full, random, urandom)"],
                "masked": view["hide"],
                "own": ["/", "/tmp", "/dev/shm", "/proc (its own pid namespace)"],
            }
        return {
            "exposed": exposed,
            "quotas": self.quotas.describe(),
            "no_new_privs": self.no_new_privs,
            "seccomp": self.seccomp,
        }

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
                script = "echo ok; id -u; grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status"
                out = await clone.run(ExecJob("command", script, "0" * 64, 10.0))
            finally:
                await clone.close()
            lines = out.output.decode(errors="replace").split()
            if out.exit_code != 0 or not lines or lines[0] != "ok" or lines[1:2] == ["0"]:
                return f"probe clone misbehaved: {out.output[:200]!r}"
            status = dict(zip(lines[2::2], lines[3::2], strict=False))
            self.no_new_privs = status.get("NoNewPrivs:") == "1"
            self.seccomp = {"2": "filter", "0": "not supported here"}.get(
                status.get("Seccomp:", ""), "unknown"
            )
            return None
        except (ZygoteError, CloneDied, OSError, RuntimeError) as exc:
            return str(exc) or type(exc).__name__
        finally:
            self.isolation = "process"
            self._templates.pop(probe.id, None)


def _count_in(clone: ForkClone, delta: int) -> None:
    """A connection relayed to ``clone`` started (+1) or ended (-1)."""
    clone.connections_in += delta
    clone.connections_at = time.monotonic()


@dataclass(frozen=True)
class _CloneHold:
    """What the engine sets aside for one clone before forking it: its
    unprivileged uid (namespaces), its working dir on the host (process
    mode), its app server's port (an app template), and its cgroup
    (``quota``: the name ``Quotas`` knows it by; ``cgroups``: what the
    clone joins). The fork's failure gives them back (``_give_back``); a
    clone's close does (``_forget``) once it exists."""

    uid: int | None
    host_dir: str | None
    port: int | None
    quota: str
    cgroups: list[str]


async def _until_app_answers(clone: ForkClone, template: TemplateSpec, port: int) -> None:
    """Publish an app clone's endpoint (the template's guest port, else the
    host port, mapped to the host port) and wait for its server to answer
    within the template's ready timeout, else ``CloneDied`` (a clone that
    died meanwhile stops the wait)."""
    guest = str(template.ports[0]) if template.ports else str(port)
    clone.endpoints = {guest: f"127.0.0.1:{port}"}
    ok = await wait_ready(
        port, template.ready_http, template.ready_timeout_s, lambda: not clone.closed
    )
    if not ok:
        raise CloneDied(
            f"app {template.id!r} not ready on port {port} within {template.ready_timeout_s:g}s"
        )
