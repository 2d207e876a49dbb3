"""Per-clone quotas through cgroups: memory counted across all of a clone's
processes (and the files it writes in its tmpfs), a process count and a
CPU share, each clone in a cgroup of its own.

rlimits bound each process alone: ten processes may each take the memory
limit. A cgroup bounds them together. Where cgroup v2 has the memory and
pids controllers for us, it is used; else cgroup v1 hierarchies of those
controllers (many VMs and older hosts mount them so); else nothing but the
rlimits the exec children always set, and ``describe()`` says which.

Every cgroup lives under the server's own (so whatever bounds the server
bounds its clones too), in ``collimate-<pid>``, made at start and removed at
close; a clone's cgroup is made when the clone is forked (off the exec
path), kept across its resets, and removed once its processes are gone.
The clone joins it itself, first thing, so nothing it forks escapes.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Literal

from .api import Limits

log = logging.getLogger("collimate_rl.local_backend.engine")

Mechanism = Literal["cgroup2", "cgroup1", "rlimits"]
CPU_PERIOD_US = 100_000
#: the clone itself and its standby, beyond what the code may start
PIDS_HEADROOM = 4


@dataclass
class Quotas:
    """The cgroup roots in force (one per hierarchy) and the clones' cgroups."""

    mechanism: Mechanism = "rlimits"
    reason: str = ""  # why not cgroups (when rlimits)
    roots: dict[str, str] = field(default_factory=dict)  # controller -> our base dir
    clones: dict[str, list[str]] = field(default_factory=dict)  # name -> its dirs
    stale: set[str] = field(default_factory=set)  # dirs whose removal must be retried
    counter: int = 0
    cpu: bool = False  # a cpu controller limits each clone's CPU bandwidth

    @classmethod
    def probe(cls, want_cpu: bool = False) -> Quotas:
        """Cgroups if this process may make them here (root), else rlimits.
        ``want_cpu``: some template sets ``cpus`` (else no clone is put in a
        CPU cgroup: that costs every exec latency, see ``Limits``)."""
        if os.geteuid() != 0:
            return cls(reason="not running as root")
        mounts = _cgroup_mounts()
        own = _own_cgroups()
        reasons: list[str] = []
        for attempt in (_try_v2, _try_v1):
            quotas, why = attempt(mounts, own, want_cpu)
            if quotas is not None:
                return quotas
            reasons.append(why)
        return cls(reason="; ".join(reasons))

    # -- clones

    def make(self, limits: Limits, cpus: float | None) -> tuple[str, list[str]]:
        """A cgroup for one clone: (its name, the ``cgroup.procs`` files it
        joins). ``("", [])`` with rlimits only."""
        if self.mechanism == "rlimits":
            return "", []
        self.counter += 1
        name = f"clone-{self.counter}"
        dirs: list[str] = []
        try:
            for controller, root in sorted(self.roots.items()):
                if controller == "cpu" and not cpus:
                    continue  # no CPU cgroup unless asked for (see ``Limits``)
                path = os.path.join(root, name)
                os.mkdir(path)
                dirs.append(path)
                self._limit(controller, path, limits, cpus)
        except OSError:
            for path in dirs:
                with contextlib.suppress(OSError):
                    os.rmdir(path)
            raise
        self.clones[name] = dirs
        procs = [os.path.join(d, "cgroup.procs") for d in dirs]
        return name, sorted(set(procs))

    def _limit(self, controller: str, path: str, limits: Limits, cpus: float | None) -> None:
        def put(name: str, value: object, optional: bool = False) -> None:
            try:
                with open(os.path.join(path, name), "w") as fh:
                    fh.write(str(value))
            except FileNotFoundError:
                if not optional:
                    raise

        pids = limits.max_processes + PIDS_HEADROOM
        if self.mechanism == "cgroup2":  # one dir holds every controller
            put("memory.max", limits.memory_bytes)
            put("memory.swap.max", 0, optional=True)
            put("pids.max", pids)
            if cpus and self.cpu:
                put("cpu.max", f"{int(cpus * CPU_PERIOD_US)} {CPU_PERIOD_US}")
            return
        if controller == "memory":
            put("memory.limit_in_bytes", limits.memory_bytes)
            put("memory.memsw.limit_in_bytes", limits.memory_bytes, optional=True)
        elif controller == "pids":
            put("pids.max", pids)
        elif controller == "cpu" and cpus:
            put("cpu.cfs_period_us", CPU_PERIOD_US)
            put("cpu.cfs_quota_us", int(cpus * CPU_PERIOD_US))

    def oom_kills(self, name: str) -> int:
        """How many processes of clone ``name`` the memory quota killed so far."""
        for path in self.clones.get(name, []):
            for fname in ("memory.events", "memory.oom_control"):
                with (
                    contextlib.suppress(OSError, ValueError),
                    open(os.path.join(path, fname)) as fh,
                ):
                    for line in fh:
                        key, _, value = line.partition(" ")
                        if key == "oom_kill":
                            return int(value)
        return 0

    def remove(self, name: str) -> None:
        """Remove a clone's cgroup (its processes are gone, or going: a busy
        one is retried by later calls and at ``close``)."""
        self.stale.update(self.clones.pop(name, []))
        for path in list(self.stale):
            try:
                os.rmdir(path)
                self.stale.discard(path)
            except FileNotFoundError:
                self.stale.discard(path)
            except OSError:
                pass  # still has processes (they are being killed): retried later

    def close(self) -> None:
        """Remove every cgroup we made (the engine killed every clone first)."""
        for name in list(self.clones):
            self.remove(name)
        for _ in range(200):
            self.remove("")
            if not self.stale:
                break
            time.sleep(0.01)
        for root in set(self.roots.values()):
            with contextlib.suppress(OSError):
                os.rmdir(root)
        if self.stale:
            log.warning("cgroups left behind (processes still in them): %s", sorted(self.stale))

    # -- reporting

    def describe(self) -> dict[str, object]:
        if self.mechanism == "rlimits":
            return {
                "mechanism": "rlimits",
                "memory": "per process (RLIMIT_AS)",
                "processes": "per uid (RLIMIT_NPROC), one uid per clone",
                "cpu": "cpu seconds per process (RLIMIT_CPU)",
                "why_not_cgroups": self.reason,
            }
        cpu = self.cpu
        return {
            "mechanism": self.mechanism,
            "memory": "per clone, all its processes and tmpfs files together "
            "(plus RLIMIT_AS per process)",
            "processes": "per clone (pids controller; plus RLIMIT_NPROC per uid)",
            "cpu": (
                "per clone CPU bandwidth for templates that set limits.cpus; "
                "RLIMIT_CPU per process for all"
                if cpu
                else "RLIMIT_CPU per process (no template sets limits.cpus)"
            ),
            "cgroups": sorted(set(self.roots.values())),
        }


def _cgroup_mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, fstype, options) of every cgroup file system."""
    out: list[tuple[str, str, set[str]]] = []
    try:
        with open("/proc/self/mountinfo") as fh:
            for line in fh:
                left, _, right = line.partition(" - ")
                fields = left.split()
                rfields = right.split()
                if len(rfields) >= 3 and rfields[0] in ("cgroup", "cgroup2"):
                    out.append((fields[4], rfields[0], set(rfields[2].split(","))))
    except OSError:
        pass
    return out


def _own_cgroups() -> dict[str, str]:
    """controller -> our cgroup path ("" for the v2 unified hierarchy)."""
    own: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup") as fh:
            for line in fh:
                _id, controllers, path = line.rstrip("\n").split(":", 2)
                for c in controllers.split(",") if controllers else [""]:
                    own[c] = path
    except OSError:
        pass
    return own


_BASES = itertools.count(1)


def _base_name() -> str:
    """Unique per engine: a process may run several servers (tests do)."""
    return f"collimate-{os.getpid()}-{next(_BASES)}"


def _sweep_stale(parent: str) -> None:
    """Remove the (empty) cgroups a server that died without its close left
    under ``parent``: ``collimate-<pid>`` of a pid that no longer runs."""
    with contextlib.suppress(OSError):
        for entry in os.listdir(parent):
            head, _, rest = entry.partition("-")
            pid = rest.partition("-")[0]
            if head != "collimate" or not pid.isdigit() or os.path.exists(f"/proc/{pid}"):
                continue
            base = os.path.join(parent, entry)
            with contextlib.suppress(OSError):
                for child in os.listdir(base):
                    if os.path.isdir(os.path.join(base, child)):
                        with contextlib.suppress(OSError):
                            os.rmdir(os.path.join(base, child))
                os.rmdir(base)


def _try_v2(
    mounts: list[tuple[str, str, set[str]]], own: dict[str, str], want_cpu: bool
) -> tuple[Quotas | None, str]:
    points = [m for m, fstype, _ in mounts if fstype == "cgroup2"]
    if not points or "" not in own:
        return None, "cgroup v2: not mounted"
    parent = os.path.join(points[0], own[""].lstrip("/"))
    try:
        with open(os.path.join(parent, "cgroup.controllers")) as fh:
            available = set(fh.read().split())
    except OSError as exc:
        return None, f"cgroup v2: {exc}"
    missing = {"memory", "pids"} - available
    if missing:
        return None, f"cgroup v2: controllers {sorted(missing)} not available to us"
    wanted = ["memory", "pids"] + (["cpu"] if want_cpu and "cpu" in available else [])
    enable = " ".join("+" + c for c in wanted)
    _sweep_stale(parent)
    base = os.path.join(parent, _base_name())
    try:
        # our own cgroup must delegate them (it cannot while it holds
        # processes, unless it is the root): then so does our base
        with open(os.path.join(parent, "cgroup.subtree_control"), "w") as fh:
            fh.write(enable)
        os.mkdir(base)
        with open(os.path.join(base, "cgroup.subtree_control"), "w") as fh:
            fh.write(enable)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.rmdir(base)
        return None, f"cgroup v2: cannot delegate {wanted} under {parent}: {exc.strerror or exc}"
    return Quotas("cgroup2", roots={"all": base}, cpu="cpu" in wanted), ""


def _try_v1(
    mounts: list[tuple[str, str, set[str]]], own: dict[str, str], want_cpu: bool
) -> tuple[Quotas | None, str]:
    roots: dict[str, str] = {}
    name = _base_name()  # the same in every hierarchy
    for controller in ("memory", "pids") + (("cpu",) if want_cpu else ()):
        point = next(
            (m for m, fstype, opts in mounts if fstype == "cgroup" and controller in opts), None
        )
        if point is None:
            continue
        parent = os.path.join(point, own.get(controller, "/").lstrip("/"))
        _sweep_stale(parent)
        base = os.path.join(parent, name)
        try:
            os.makedirs(base, exist_ok=True)
        except OSError as exc:
            if controller != "cpu":
                return None, f"cgroup v1: cannot make {base}: {exc.strerror or exc}"
            continue
        roots[controller] = base
    if "memory" not in roots or "pids" not in roots:
        for base in roots.values():
            with contextlib.suppress(OSError):
                os.rmdir(base)
        return None, "cgroup v1: no memory and pids hierarchies"
    return Quotas("cgroup1", roots=roots, cpu="cpu" in roots), ""
