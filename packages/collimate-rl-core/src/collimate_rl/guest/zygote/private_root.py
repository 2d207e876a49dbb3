"""A namespaced clone's private root: its namespaces, and the file system its
code sees, mounted afresh for every generation (every user of the clone).

The clone stays in its own mount namespace with the host's view (read-only);
only its exec children enter the private root, by chroot. That root holds
nothing of the host but its *view* (see the engine's ``exposure`` module):
the system directories, the interpreter's trees and the paths the template
names, read-only, and a minimal ``/dev``. The view is built once per clone
in the scaffolding, a small tmpfs over /tmp that the code never sees (at
VIEW, from O_PATH handles taken before the host's /tmp was hidden). Each
generation gets a tmpfs at GEN_LAYER whose ``root`` directory belongs to the
generation's uid (so code may make top-level dirs, /task or /workspace, and
its /tmp lives there), with the view's top-level entries bound in: one
detach of GEN_LAYER takes a generation away whole. The pid namespace's /proc
is mounted once at CLONE_PROC.
"""

from __future__ import annotations

import fcntl
import os
import socket
import stat
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
    remount_readonly,
    set_hostname,
    setns,
    unshare,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # never at run time: the zygote stays free of the typing module
    from typing import Any

    Msg = dict[str, Any]


GEN_LAYER = "/tmp/gen"
GEN_ROOT = GEN_LAYER + "/root"
CLONE_PROC = "/tmp/proc"
VIEW = "/tmp/view"
#: The devices a clone's /dev holds (name, major, minor), all mode 0666.
DEVICES = (("null", 1, 3), ("zero", 1, 5), ("full", 1, 7), ("random", 1, 8), ("urandom", 1, 9))
DEV_LINKS = (
    ("fd", "/proc/self/fd"),
    ("stdin", "/proc/self/fd/0"),
    ("stdout", "/proc/self/fd/1"),
    ("stderr", "/proc/self/fd/2"),
)


class PrivateRoot:
    """The namespaces and the view (once per clone); the private root (per generation)."""

    def __init__(self, spec: Msg, netns_fd: int) -> None:
        self.spec = spec
        self.netns_fd = netns_fd  # a recycled, empty net namespace to join
        self.workdir: str = spec["workdir"]
        view = spec.get("view") or {}
        self.links: list[tuple[str, str]] = [
            (lk.partition("=")[0], lk.partition("=")[2]) for lk in view.get("links", [])
        ]
        self.binds: list[str] = list(view.get("binds", []))
        self.hide: list[str] = list(view.get("hide", []))
        self.tops: list[str] = []  # the view's top-level entries (known once it is built)

    def enter(self, uid: int | None) -> None:
        """The namespaces, the scaffolding and the view, once per clone; then
        the first private root (``mount_generation``)."""
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
        # handles on the view's trees, taken while the host's /tmp is visible
        handles = [(path, open_path(path)) for path in self.binds]
        try:
            # kept for every generation: the scaffolding hides the host's /tmp
            mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=700")
            for path in (GEN_LAYER, CLONE_PROC, VIEW):
                os.mkdir(path, 0o700)
            self.build_view(handles)
        finally:
            for _path, fd in handles:
                os.close(fd)
        mount("proc", CLONE_PROC, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
        set_hostname(b"sandbox")
        if own_net:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", IFF_UP_LOOPBACK_RUNNING))
        self.mount_generation(uid)

    def build_view(self, handles: list[tuple[str, int]]) -> None:
        """At VIEW, read-only: every tree of the view bound at its own path
        (through its handle), the masked paths covered, and a /dev of a few
        device nodes. Its top-level entries are what each generation binds."""
        mount("tmpfs", VIEW, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755")
        for path, fd in handles:
            target = VIEW + path
            os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
            if os.path.isdir(f"/proc/self/fd/{fd}"):
                os.makedirs(target, mode=0o755, exist_ok=True)
            else:
                os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o444))
            mount(f"/proc/self/fd/{fd}", target, None, MS_BIND | MS_REC, None)
        empty_dir, empty_file = "/tmp/empty", "/tmp/empty-file"
        os.mkdir(empty_dir, 0o000)
        os.close(os.open(empty_file, os.O_CREAT | os.O_WRONLY, 0o000))
        for path in self.hide:
            target = VIEW + path
            if os.path.isdir(target):
                mount(empty_dir, target, None, MS_BIND, None)
            elif os.path.lexists(target):
                mount(empty_file, target, None, MS_BIND, None)
        dev = VIEW + "/dev"
        os.mkdir(dev, 0o755)
        mount("tmpfs", dev, "tmpfs", MS_NOSUID, "size=64k,mode=755")
        for name, major, minor in DEVICES:
            os.mknod(f"{dev}/{name}", 0o666 | stat.S_IFCHR, os.makedev(major, minor))
            os.chmod(f"{dev}/{name}", 0o666)
        for name, target in DEV_LINKS:
            os.symlink(target, f"{dev}/{name}")
        os.mkdir(f"{dev}/shm", 0o1777)
        remount_readonly(dev, MS_NOSUID)
        for name in ("proc", "tmp"):
            os.makedirs(f"{VIEW}/{name}", 0o755, exist_ok=True)
        remount_readonly(VIEW, MS_NOSUID | MS_NODEV)
        self.tops = sorted(os.listdir(VIEW))

    def mount_generation(self, uid: int | None) -> None:
        """A fresh private root at GEN_ROOT, in a new tmpfs (GEN_LAYER): "/"
        belongs to the generation's uid, so its code may make top-level dirs
        (/task, /workspace) as in a VM, while everything of the view stays
        read-only; /tmp (the working dir) is a dir of that tmpfs, /dev/shm a
        tmpfs of its own, /proc the clone's."""
        size = self.spec["tmp_bytes"]
        opts = f"size={size},nr_inodes=65536,mode=700"
        mount("tmpfs", GEN_LAYER, "tmpfs", MS_NOSUID | MS_NODEV, opts)
        new = GEN_ROOT
        os.mkdir(new, 0o755)
        for name, target in self.links:
            os.symlink(target, f"{new}/{name}")
        for name in self.tops:
            if name in ("proc", "tmp"):
                continue
            os.mkdir(f"{new}/{name}", 0o755)
            mount(f"{VIEW}/{name}", f"{new}/{name}", None, MS_BIND | MS_REC, None)
        os.mkdir(new + "/tmp", 0o1777)
        os.chmod(new + "/tmp", 0o1777)
        for tree in self.binds:
            if tree.startswith("/tmp/"):  # the generation's /tmp is its own: bound into it
                os.makedirs(os.path.dirname(new + tree), 0o755, exist_ok=True)
                if os.path.isdir(VIEW + tree):
                    os.makedirs(new + tree, 0o755, exist_ok=True)
                else:
                    os.close(os.open(new + tree, os.O_CREAT | os.O_WRONLY, 0o444))
                mount(VIEW + tree, new + tree, None, MS_BIND | MS_REC, None)
        os.mkdir(new + "/proc", 0o555)
        mount("tmpfs", new + "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777")
        mount(CLONE_PROC, new + "/proc", None, MS_BIND, None)
        if self.workdir != "/tmp":
            os.makedirs(new + self.workdir, exist_ok=True)
        if uid is not None:
            os.chown(new, uid, uid)
            os.chown(new + self.workdir, uid, uid)

    def wipe(self) -> None:
        """Detach the writable layer with the private root and every mount in
        it (the kernel frees them once nothing uses them: the caller made
        sure no process is left), and drop System V ipc objects, which
        outlive their processes, with a new ipc namespace."""
        detach(GEN_LAYER)
        unshare(CLONE_NEWIPC, "unshare(ipc)")


def open_path(path: str) -> int:
    """An O_PATH handle on a host path (a tree or a single file)."""
    return os.open(path, os.O_PATH | os.O_CLOEXEC)
