"""Setting up a process the clone forks for code (an exec child or an app
server): scheduling class, environment, limits, the private root, the uid,
no new privileges and the seccomp filter; and the clone's own cgroup."""

from __future__ import annotations

import contextlib
import os
import resource
import signal

from .kernel import install_seccomp, no_new_privs
from .private_root import GEN_ROOT
from .seccomp import FILTER

TYPE_CHECKING = False
if TYPE_CHECKING:  # never at run time: the zygote stays free of the typing module
    from typing import Any

    Msg = dict[str, Any]


def idle_priority(spec: Msg) -> None:
    """Background scheduling class (only when the engine runs as root and
    asked for it, ``spec["nice"]``: leaving it again needs root)."""
    if spec.get("nice") is not None:
        with contextlib.suppress(OSError, AttributeError):
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


def normal_priority(spec: Msg) -> None:
    """Back from the zygote's idle class to the server's own priority."""
    if spec.get("nice") is not None:
        with contextlib.suppress(OSError, AttributeError):
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, 0, spec["nice"])


def join_cgroups(spec: Msg) -> None:
    """The clone moves itself into its cgroups (``spec["cgroups"]``: their
    ``cgroup.procs`` files), before it forks anything, and shields itself
    from their OOM killer: when the memory quota is hit, the code's
    processes die, never the clone that reports it."""
    procs = spec.get("cgroups") or []
    for path in procs:
        with open(path, "w") as fh:
            fh.write("0")
    if procs:
        set_oom_score_adj(-1000)


def set_oom_score_adj(value: int) -> None:
    with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as fh:
        fh.write(str(value))


def child_env(spec: Msg, seed: str | None) -> dict[str, str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
        "HOME": spec["workdir"],
        "TMPDIR": spec["workdir"] if spec["mode"] != "ns" else "/tmp",
        "LANG": "C.UTF-8",
        "PWD": spec["workdir"],
    }
    env.update(spec.get("env") or {})  # the template's own (a gateway bake's ready.env)
    if seed:
        env["COLLIMATE_SEED"] = seed
    return env


def prepare_child(
    spec: Msg, out_fd: int | None, limits: Msg, cpu: bool = True, enter: bool = True
) -> None:
    """Process-level setup shared by execs and app servers (after fork).

    ``enter=False`` stops short of ``enter_private_root`` (the priority, the
    private root and the uid), for a standby that prepares further as root
    in the idle class it was forked in, and enters once it is ready."""
    os.setsid()
    if spec.get("cgroups"):
        set_oom_score_adj(0)  # (the clone's -1000 must not pass to the code)
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    null = os.open("/dev/null", os.O_RDWR)
    os.dup2(null, 0)
    if out_fd is not None:
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
    else:
        os.dup2(null, 1)
        os.dup2(null, 2)
    if cpu:
        c = int(limits["cpu_seconds"])
        resource.setrlimit(resource.RLIMIT_CPU, (c, c + 1))
    if limits.get("address_space", True):
        resource.setrlimit(resource.RLIMIT_AS, (limits["memory_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_size_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if enter:
        enter_private_root(spec, limits)


def enter_private_root(spec: Msg, limits: Msg) -> None:
    """The server's priority, the private root, the unprivileged uid, then
    no new privileges and the seccomp filter; in that order, as each step
    needs the privileges the next one drops (the filter refuses chroot)."""
    normal_priority(spec)  # while still root: the uid below could not
    if spec["mode"] == "ns":
        # into the private root while still root; the code never has
        # CAP_SYS_CHROOT, so it cannot get back out
        os.chdir(GEN_ROOT)
        os.chroot(".")
    uid = spec.get("uid")
    if uid is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (limits["max_processes"],) * 2)
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    os.chdir(spec["workdir"])
    if spec["mode"] == "ns":
        no_new_privs()
        if FILTER is not None:
            install_seccomp(FILTER)
