"""The seccomp filter of code in a namespaced clone: refuse what a grader
never needs, so that a kernel bug behind one of those calls is out of reach.

Refused with ``EPERM``: tracing or reading other processes (``ptrace``,
``process_vm_readv``/``writev``, ``pidfd_getfd``), keyrings, BPF,
``perf_event_open``, ``userfaultfd``, io_uring, every mount call and
``chroot``, new namespaces (``unshare``, ``setns``, ``clone`` with a
``CLONE_NEW*`` flag), kernel modules, kexec and reboot, swap, accounting,
quotas, the clocks, host and domain names, port I/O, file handles by
number, fanotify and the kernel log. ``clone3`` answers ``ENOSYS`` (its
flags sit in memory a filter cannot read), so the C library falls back to
``clone``, whose flags it can. Everything a Python program, a shell, the
SDK's grader (fork, pidfds, memfds, ``sendmsg``/``recvmsg``) and the
built-in templates use stays allowed.

x86_64 only (another architecture's calls get no filter, and the engine
says so); a call made through another ABI (32-bit ``int 0x80``, x32) kills
the process, as its numbers mean other calls.

The program is built once, in the zygote (standard library only: classic
BPF by hand), and installed by every exec child and app server before it
waits for work, off the exec's path.
"""

from __future__ import annotations

import errno
import os
import struct

AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000
LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
JGE = 0x35  # BPF_JMP | BPF_JGE | BPF_K
JSET = 0x45  # BPF_JMP | BPF_JSET | BPF_K
RET = 0x06  # BPF_RET | BPF_K
OFF_NR, OFF_ARCH, OFF_ARG0 = 0, 4, 16  # in struct seccomp_data (little-endian)
CLONE_NEW_FLAGS = 0x7E020000  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET
NR_CLONE, NR_CLONE3 = 56, 435

#: x86_64 numbers of the refused calls.
REFUSED_X86_64 = {
    "ptrace": 101,
    "syslog": 103,
    "vhangup": 153,
    "pivot_root": 155,
    "adjtimex": 159,
    "chroot": 161,
    "acct": 163,
    "settimeofday": 164,
    "mount": 165,
    "umount2": 166,
    "swapon": 167,
    "swapoff": 168,
    "reboot": 169,
    "sethostname": 170,
    "setdomainname": 171,
    "iopl": 172,
    "ioperm": 173,
    "init_module": 175,
    "delete_module": 176,
    "quotactl": 179,
    "lookup_dcookie": 212,
    "clock_settime": 227,
    "kexec_load": 246,
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    "unshare": 272,
    "perf_event_open": 298,
    "fanotify_init": 300,
    "name_to_handle_at": 303,
    "open_by_handle_at": 304,
    "clock_adjtime": 305,
    "setns": 308,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "finit_module": 313,
    "kexec_file_load": 320,
    "bpf": 321,
    "userfaultfd": 323,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "pidfd_getfd": 438,
    "mount_setattr": 442,
    "quotactl_fd": 443,
}


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def build_filter() -> bytes | None:
    """The packed filter for this machine, or None where there is none."""
    if os.uname().machine != "x86_64":
        return None
    eperm = RET_ERRNO | errno.EPERM
    out = [
        _insn(LD_W_ABS, 0, 0, OFF_ARCH),
        _insn(JEQ, 1, 0, AUDIT_ARCH_X86_64),
        _insn(RET, 0, 0, RET_KILL_PROCESS),
        _insn(LD_W_ABS, 0, 0, OFF_NR),
        _insn(JGE, 0, 1, X32_SYSCALL_BIT),
        _insn(RET, 0, 0, RET_KILL_PROCESS),
        _insn(JEQ, 0, 1, NR_CLONE3),
        _insn(RET, 0, 0, RET_ERRNO | errno.ENOSYS),
        # clone: refused with a CLONE_NEW* flag, allowed otherwise
        _insn(JEQ, 0, 4, NR_CLONE),
        _insn(LD_W_ABS, 0, 0, OFF_ARG0),
        _insn(JSET, 0, 1, CLONE_NEW_FLAGS),
        _insn(RET, 0, 0, eperm),
        _insn(RET, 0, 0, RET_ALLOW),
    ]
    for nr in sorted(REFUSED_X86_64.values()):
        out.append(_insn(JEQ, 0, 1, nr))
        out.append(_insn(RET, 0, 0, eperm))
    out.append(_insn(RET, 0, 0, RET_ALLOW))
    return b"".join(out)


#: Built when the zygote imports this module, shared by every fork of it.
FILTER = build_filter()
