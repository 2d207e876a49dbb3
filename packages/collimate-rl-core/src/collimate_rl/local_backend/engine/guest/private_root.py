"""A namespaced clone's private root: its namespaces, and the file system its
code sees, mounted afresh for every generation (every user of the clone).

The clone stays in its own mount namespace with the host's view (read-only);
only its exec children enter the private root, by chroot. Its scaffolding is
a small tmpfs over /tmp that the code never sees. Each generation gets a tmpfs
at GEN_LAYER holding the overlay's writable layer, and the private root is
mounted inside it, at GEN_ROOT, so one detach of GEN_LAYER takes a generation
away whole (one unmount, one RCU grace period). The pid namespace's /proc is
mounted once at CLONE_PROC.
"""

from __future__ import annotations

import fcntl
import os
import socket
import struct

from .kernel import (
    CLONE_NEWIPC,
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWUTS,
    IFF_UP_LOOPBACK_RUNNING,
    MS_BIND,
    MS_NODEV,
    MS_NOEXEC,
    MS_NOSUID,
    MS_REC,
    SIOCSIFFLAGS,
    detach,
    make_all_mounts_readonly_private,
    mount,
    set_hostname,
    setns,
    unshare,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # never at run time: the zygote stays free of the typing module
    from typing import Any

    Msg = dict[str, Any]


def bind_into(source: str, target: str) -> None:
    """A recursive bind of ``source`` at ``target``, making ``target`` only
    when it is missing (it rarely is: the mount is tried first)."""
    try:
        mount(source, target, None, MS_BIND | MS_REC, None)
    except FileNotFoundError:
        os.makedirs(target, exist_ok=True)
        mount(source, target, None, MS_BIND | MS_REC, None)


GEN_LAYER = "/tmp/gen"
GEN_ROOT = GEN_LAYER + "/root"
CLONE_PROC = "/tmp/proc"


class PrivateRoot:
    """The namespaces (once per clone) and the private root (per generation)."""

    def __init__(self, spec: Msg, netns_fd: int) -> None:
        self.spec = spec
        self.netns_fd = netns_fd  # a recycled, empty net namespace to join
        self.workdir: str = spec["workdir"]
        # the host's other file systems (their mount points are dirs of the
        # host root, so of every overlay over it too), looked up once
        self.binds: list[str] = [m for m in spec.get("binds", []) if os.path.isdir(m)]
        self.has_dev_shm: bool | None = None  # in the private root: known after the first
        self.exposed: list[tuple[str, list[tuple[str, int]]]] = []
        self.staged: list[tuple[str, str]] = []  # (private dir, its stand-in)

    def enter(self, uid: int | None) -> None:
        """The namespaces and the scaffolding, once per clone; then the first
        private root (``mount_generation``)."""
        own_net = self.spec["own_net"]
        flags = CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS
        if own_net and self.netns_fd < 0:
            flags |= CLONE_NEWNET
        unshare(flags)
        if own_net and self.netns_fd >= 0:
            # a net namespace whose previous clone is entirely gone: cheaper than a new one
            setns(self.netns_fd, CLONE_NEWNET, "setns(net)")
        if self.netns_fd >= 0:
            os.close(self.netns_fd)
            self.netns_fd = -1
        make_all_mounts_readonly_private()
        # kept for every generation: the scaffolding hides the host's /tmp
        self.exposed = self.open_exposed()
        mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=700")
        for path in (GEN_LAYER, CLONE_PROC):
            os.mkdir(path, 0o700)
        self.stage_exposed()
        mount("proc", CLONE_PROC, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
        set_hostname(b"sandbox")
        if own_net:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", IFF_UP_LOOPBACK_RUNNING))
        self.mount_generation(uid)

    def mount_generation(self, uid: int | None) -> None:
        """A fresh private root at GEN_ROOT: the host root file system as the
        read-only lower layer of an overlay whose upper layer lives in a new
        tmpfs (GEN_LAYER). "/" itself belongs to the generation's uid, so its
        code may make top-level dirs (/task, /workspace) as in a VM, while
        everything the host owns (/etc, /usr, ...) stays unwritable to it."""
        size = self.spec["tmp_bytes"]
        mount("tmpfs", GEN_LAYER, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=700")
        for name in ("upper", "work", "root"):
            os.mkdir(f"{GEN_LAYER}/{name}", 0o755)
        if uid is not None:
            os.chown(GEN_LAYER + "/upper", uid, uid)
        new = GEN_ROOT
        layers = f"lowerdir=/,upperdir={GEN_LAYER}/upper,workdir={GEN_LAYER}/work"
        mount("overlay", new, "overlay", MS_NOSUID | MS_NODEV, layers)
        for mnt in self.binds:  # other host file systems, read-only
            bind_into(mnt, new + mnt)
        tmp_opts = f"size={size},nr_inodes=65536,mode=1777"
        mount("tmpfs", new + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, tmp_opts)
        self.expose_interpreter(new)
        if self.has_dev_shm is None:
            self.has_dev_shm = os.path.isdir(new + "/dev/shm")
        if self.has_dev_shm:
            mount("tmpfs", new + "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777")
        mount(CLONE_PROC, new + "/proc", None, MS_BIND, None)
        if self.workdir != "/tmp":
            os.makedirs(new + self.workdir, exist_ok=True)
        if uid is not None:
            os.chown(new + self.workdir, uid, uid)

    def wipe(self) -> None:
        """Detach the writable layer with the private root and every mount in
        it (the kernel frees them once nothing uses them: the caller made
        sure no process is left), and drop System V ipc objects, which
        outlive their processes, with a new ipc namespace."""
        detach(GEN_LAYER)
        unshare(CLONE_NEWIPC, "unshare(ipc)")

    def open_exposed(self) -> list[tuple[str, list[tuple[str, int]]]]:
        """O_PATH handles on the interpreter's trees, taken while the host's
        paths are still visible (see ``stage_exposed``)."""
        return [
            (private, [(t, os.open(t, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)) for t in trees])
            for private, trees in self.spec.get("expose", [])
        ]

    def stage_exposed(self) -> None:
        """Re-expose the interpreter's trees that live under a private dir (see
        the engine's ``exposure`` module): an empty tmpfs standing in for the
        private dir, with read-only binds of just those trees, reached through
        the handles (the host's /tmp is hidden by now). Built once per clone
        in the scaffolding; each generation binds the whole of it in one
        mount. Trees under /tmp are bound into each generation's own /tmp."""
        for index, (private, trees) in enumerate(self.exposed):
            if private == "/tmp":
                continue
            stage = f"/tmp/expose{index}"
            os.mkdir(stage, 0o700)
            mount("tmpfs", stage, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755")
            for tree, fd in trees:
                target = stage + tree[len(private) :]
                os.makedirs(target, exist_ok=True)
                mount(f"/proc/self/fd/{fd}", target, None, MS_BIND | MS_REC, None)
            self.staged.append((private, stage))

    def expose_interpreter(self, root: str) -> None:
        """Bind the staged trees (see ``stage_exposed``) into a new root."""
        for private, stage in self.staged:
            bind_into(stage, root + private)
        for private, trees in self.exposed:
            if private != "/tmp":
                continue
            for tree, fd in trees:
                os.makedirs(root + tree, exist_ok=True)
                mount(f"/proc/self/fd/{fd}", root + tree, None, MS_BIND | MS_REC, None)
