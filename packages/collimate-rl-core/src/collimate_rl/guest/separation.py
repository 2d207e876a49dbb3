"""Keeping a candidate's process apart from everything else in the guest.

The candidates of a pack share one exec, and so one uid: the grader, the
spawner and every candidate run as the clone's user. Under RL pressure a
candidate gains as much from lowering its siblings' rewards (a GRPO
advantage is relative to the group) or from stalling the step as from
passing its tests. So each candidate's process, right after the spawner
forked it and before its code arrives, is confined (:func:`_w_separator`):

* a **Landlock domain of its own, scoped** (signals and abstract unix
  sockets): it and what it forks cannot signal, stop, trace, read the
  memory or the ``/proc`` fds and environment of any process outside it,
  which is every other process of the guest: the spawner, the grader, the
  siblings, and whatever they leave (the kernel's ptrace check, which
  ``/proc/<pid>/mem``, ``process_vm_readv``, ``pidfd_getfd`` and ``kcmp``
  go through, fails across Landlock domains);
* a **seccomp filter** for what a same-uid process may do to another
  without a ptrace check: set its rlimits (``prlimit64``), its priority,
  scheduling class, CPUs or I/O class. These calls are refused unless they
  name the caller as 0 (any pid is refused, its own too: one filter,
  installed in the spawner, serves every candidate); a call through another
  system-call ABI kills the process;
* the **first to go when memory runs out**: its ``oom_score_adj`` is 1000,
  so the clone's OOM killer picks it (and its children) before the grader;
* **undumpable**: its ``/proc`` entries belong to root, so nothing of its
  uid can write them (its ``oom_score_adj``, say) or read its memory
  through them (itself included: ``/proc/self/mem`` is closed to it).

Only the Landlock domain is made in the candidate's process (one system
call after the fork); the rest is done once, to the spawner, and inherited.
The spawner is in a Landlock domain of its own, in which the candidates'
are nested: its ``kill(-1)`` between two candidates reaches everything the
last one left, and nothing outside (the grader). Each candidate works in
the exec's working directory, and the sweep between two candidates
removes whatever it wrote there and in the other writable places.

All of it needs Linux with Landlock ABI 6 (kernel 6.12) and x86_64 for the
filter; :func:`_w_separator` says why not elsewhere, and a pack then does
not run (its candidates are graded alone, each in an exec of its own).

The same pieces keep other guest programs' processes apart, each program
carrying this module joined into it (it imports it relatively): the
language runner's runs (its own filter stacked on :func:`_w_filter`'s
calls) and the stateful kernel (``kernel_program.py``: the same filter,
but for the calls refused outright, and the same ``oom_score_adj``).
"""

# The guest may run Python 3.8 with nothing imported beyond its preload:
# no zip(strict=), no contextlib, and %-formatting is as good as any.
# ruff: noqa: UP031
from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - typing only, never imported in the guest
    from collections.abc import Callable
    from typing import Any

_W_LANDLOCK_CREATE = 444  # landlock_create_ruleset (one number on every architecture)
_W_LANDLOCK_RESTRICT = 446  # landlock_restrict_self
_W_LANDLOCK_VERSION = 1  # LANDLOCK_CREATE_RULESET_VERSION
_W_LANDLOCK_SCOPES = 3  # LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL
_W_LANDLOCK_MIN_ABI = 6  # where scopes came in (Linux 6.12)

_W_SECCOMP = 317  # seccomp(2) on x86_64
_W_AUDIT_ARCH_X86_64 = 0xC000003E
_W_X32_BIT = 0x40000000
_W_RET_KILL = 0x80000000  # SECCOMP_RET_KILL_PROCESS
_W_RET_EPERM = 0x00050001  # SECCOMP_RET_ERRNO | EPERM
_W_RET_ALLOW = 0x7FFF0000

# Calls on another process that need no ptrace access, only the same uid:
# (number, index of the argument naming the process, the value the argument
# before it must have, or None). prlimit64, sched_setparam,
# sched_setscheduler, sched_setaffinity, sched_setattr; setpriority and
# ioprio_set only with PRIO_PROCESS / IOPRIO_WHO_PROCESS (the others name
# a group or a whole uid).
_W_OWN_PROCESS_ONLY = (
    (302, 0, None),
    (142, 0, None),
    (144, 0, None),
    (203, 0, None),
    (314, 0, None),
    (141, 1, 0),
    (251, 1, 1),
)
# Refused outright (the clone's own filter refuses them too, where there is one).
_W_REFUSED = (101, 310, 311, 312, 438)  # ptrace, process_vm_readv/writev, kcmp, pidfd_getfd

_W_OOM_WORST = b"1000"


def _w_insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return code.to_bytes(2, "little") + bytes((jt, jf)) + (k & 0xFFFFFFFF).to_bytes(4, "little")


def _w_filter(refused: tuple[int, ...] = _W_REFUSED) -> bytes:
    """The classic BPF program of the candidates' filter (see the module
    docstring): the calls of :data:`_W_OWN_PROCESS_ONLY` refused unless they
    name the caller as 0, those of ``refused`` refused outright, another
    system-call ABI than x86_64's killed (its numbers mean other calls)."""
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    out = [
        _w_insn(ld, 0, 0, 4),  # arch
        _w_insn(jeq, 1, 0, _W_AUDIT_ARCH_X86_64),
        _w_insn(ret, 0, 0, _W_RET_KILL),
        _w_insn(ld, 0, 0, 0),  # nr
        _w_insn(jge, 0, 1, _W_X32_BIT),
        _w_insn(ret, 0, 0, _W_RET_KILL),
    ]
    for nr in refused:
        out.append(_w_insn(jeq, 0, 1, nr))
        out.append(_w_insn(ret, 0, 0, _W_RET_EPERM))
    for nr, arg, before in _W_OWN_PROCESS_ONLY:
        block = []
        if before is not None:
            block.append(_w_insn(ld, 0, 0, 16 + 8 * (arg - 1)))  # (low words: the kernel's ints)
            block.append(_w_insn(jeq, 0, 2, before))  # (else: refused)
        block.append(_w_insn(ld, 0, 0, 16 + 8 * arg))
        block.append(_w_insn(jeq, 1, 0, 0))
        block.append(_w_insn(ret, 0, 0, _W_RET_EPERM))
        block.append(_w_insn(ret, 0, 0, _W_RET_ALLOW))
        out.append(_w_insn(jeq, 0, len(block), nr))  # (else: over the block, which returns)
        out.extend(block)
    out.append(_w_insn(ret, 0, 0, _W_RET_ALLOW))
    return b"".join(out)


def _w_seccomp(syscall: Any, program: bytes) -> bool:
    """Install the classic BPF ``program`` as a seccomp filter of this
    process (and of all it starts), through libc's ``syscall``: whether it
    took (it needs no_new_privs; ``ctypes.get_errno()`` says why not)."""
    import ctypes

    class _Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]

    return bool(syscall(_W_SECCOMP, 1, 0, ctypes.byref(_Prog(len(program) // 8, program))) == 0)


def _w_first_to_go() -> None:
    """Make this process (and what it starts) the first the OOM killer
    picks (best effort: before it is undumpable, its /proc is its own)."""
    try:
        fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
        try:
            os.write(fd, _W_OOM_WORST)
        finally:
            os.close(fd)
    except OSError:
        pass


def _w_separator() -> tuple[Callable[[], bool] | None, str | None]:
    """``(confine, None)``, or ``(None, why)`` where candidates cannot be
    kept apart here. Confines the spawner itself (the filter, undumpable,
    ``oom_score_adj``: all inherited by every candidate's process, so they
    cost a candidate nothing) and returns ``confine()``, which runs in
    a candidate's process right after the fork and puts it in a Landlock
    domain of its own: one system call.

    The spawner entering its own domain with the same ruleset is the proof
    that a candidate's process can enter one: same ruleset, same flags, the
    same no_new_privs, one level deeper (two of Landlock's sixteen). What
    is left is the kernel failing to allocate a domain right after it
    allocated a whole process; such a candidate's process exits before its
    code arrives. (A throwaway process proving it instead cost each pack a
    fork of the warm interpreter: 2.5 ms of CPU, an eighth of a small
    pack's fixed cost.)"""
    if not sys.platform.startswith("linux"):
        return None, "not Linux"
    if os.uname().machine != "x86_64":
        return None, "no seccomp filter for %s" % os.uname().machine
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        syscall, prctl = libc.syscall, libc.prctl
    except Exception as exc:  # a guest without ctypes
        return None, "no ctypes: %s" % exc
    abi = syscall(_W_LANDLOCK_CREATE, None, 0, _W_LANDLOCK_VERSION)
    if abi < _W_LANDLOCK_MIN_ABI:
        return None, "this kernel's Landlock (ABI %d) cannot scope signals (6.12's ABI 6)" % abi
    attr = (0).to_bytes(16, "little") + _W_LANDLOCK_SCOPES.to_bytes(8, "little")
    ruleset = syscall(_W_LANDLOCK_CREATE, attr, len(attr), 0)
    if ruleset < 0:
        return None, "landlock_create_ruleset failed (errno %d)" % ctypes.get_errno()
    os.set_inheritable(ruleset, False)
    if prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS (needed for both; inherited)
        return None, "cannot set no_new_privs (errno %d)" % ctypes.get_errno()
    # The spawner in a domain of its own too: each candidate's is nested in
    # it, so the spawner's kill(-1) reaches every process a candidate left
    # and never the grader (``worker._w_kill_descendants``).
    if syscall(_W_LANDLOCK_RESTRICT, ruleset, 0) != 0:
        return None, "landlock_restrict_self failed (errno %d)" % ctypes.get_errno()

    if not _w_seccomp(syscall, _w_filter()):
        return None, "cannot install a seccomp filter (errno %d)" % ctypes.get_errno()
    _w_first_to_go()  # (before it is undumpable: then its /proc files are root's, this one too)
    prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: its /proc, and its candidates', is root's

    def confine() -> bool:
        if syscall(_W_LANDLOCK_RESTRICT, ruleset, 0) != 0:
            return False
        os.close(ruleset)
        return True

    return confine, None
