"""The Linux calls the guest roles need that the standard library lacks
(namespaces, mounts, prctl), through libc, and their constants."""

from __future__ import annotations

import ctypes
import os
import struct

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_RDONLY = 1
MS_REMOUNT = 32
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
AT_FDCWD = -100
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY = 0x1
MOUNT_ATTR_NOSUID = 0x2
SYS_MOUNT_SETATTR = 442  # the same number on every architecture (new-style syscall table)
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NAME = 15
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
SIOCSIFFLAGS = 0x8914
IFF_UP_LOOPBACK_RUNNING = 0x1 | 0x8 | 0x40

libc = ctypes.CDLL(None, use_errno=True)


def check(ret: int, what: str) -> None:
    """Raise OSError (with errno) for a failed libc call."""
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount(src: str | None, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    check(
        libc.mount(
            src.encode() if src else None,
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        "mount " + target,
    )


def detach(target: str) -> None:
    """Lazily unmount ``target`` and everything mounted under it."""
    check(libc.umount2(target.encode(), MNT_DETACH), "umount " + target)


def unshare(flags: int, what: str = "unshare") -> None:
    check(libc.unshare(flags), what)


def setns(fd: int, kind: int, what: str = "setns") -> None:
    check(libc.setns(fd, kind), what)


def make_all_mounts_readonly_private() -> None:
    """Every mount of this mount namespace private, read-only and nosuid, in
    one call (mount_setattr, recursive from "/")."""
    attr = struct.pack("QQQQ", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0, MS_PRIVATE, 0)
    buf = ctypes.create_string_buffer(attr, len(attr))
    check(
        libc.syscall(
            SYS_MOUNT_SETATTR, AT_FDCWD, b"/", AT_RECURSIVE, buf, ctypes.c_size_t(len(attr))
        ),
        "mount_setattr",
    )


def set_process_name(name: bytes) -> None:
    """Name this process's role in ps/top/perf (a forked child keeps its
    parent's name otherwise, and every role would read "python")."""
    libc.prctl(PR_SET_NAME, ctypes.c_char_p(name), 0, 0, 0)


def make_undumpable() -> None:
    """No other process of our uid may read our memory or open our fds
    through /proc, or ptrace us (and no core dumps). Inherited by forks."""
    check(libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")


def make_dumpable() -> None:
    """Undo :func:`make_undumpable` for this process (a fork that holds
    nothing to protect, and whose code may read its own ``/proc/self``)."""
    check(libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")


def set_child_subreaper() -> None:
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def die_with_parent(sig: int) -> None:
    libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)


def set_hostname(name: bytes) -> None:
    libc.sethostname(name, len(name))


def no_new_privs() -> None:
    """No execve of this process or its children may gain privileges again
    (setuid/setgid bits, file capabilities); also what lets an unprivileged
    process install a seccomp filter. Inherited, and cannot be undone."""
    zero = ctypes.c_ulong(0)
    check(
        libc.prctl(PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), zero, zero, zero),
        "prctl(PR_SET_NO_NEW_PRIVS)",
    )


def install_seccomp(prog: bytes) -> None:
    """Install a classic-BPF seccomp filter (``prog``: packed ``sock_filter``
    instructions); needs :func:`no_new_privs` first. Inherited by forks."""
    count = len(prog) // 8
    buf = ctypes.create_string_buffer(prog, len(prog))
    fprog = struct.pack("HxxxxxxQ", count, ctypes.addressof(buf))
    fbuf = ctypes.create_string_buffer(fprog, len(fprog))
    zero = ctypes.c_ulong(0)
    check(
        libc.prctl(PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER), fbuf, zero, zero),
        "prctl(PR_SET_SECCOMP)",
    )


def remount_readonly(target: str, flags: int) -> None:
    """Make the mount at ``target`` read-only (``flags``: the ones it keeps)."""
    mount(None, target, None, MS_REMOUNT | MS_RDONLY | flags, None)
