"""The warm interpreter of a template (a "zygote"), its clones and their execs.

This file runs as a standalone script (``python -I -S _zygote.py``), never
imported by the server: it must stay stdlib-only and small, because every
page it touches is copied (on write) into every clone. Three roles, one file,
each a fork of the one before, as a microVM control plane forks a warm VM:

* **zygote**: started once per interpreter, imports the template's ``preload``
  modules, then serves ``clone`` requests from the engine by ``fork()``.
* **clone**: serves one session (or one-shot exec) at a time. In ``ns`` mode
  it is pid 1 of its own pid namespace and owns mount, ipc, uts and optionally
  net namespaces, in which it mounts the code's private root (an overlay over
  the read-only host root, own tmpfs ``/tmp`` and ``/dev/shm``, own ``/proc``).
  The clone itself never runs the code and never leaves the host's view; only
  its exec children enter the private root. So once a session is over, a
  ``reset`` wipes the clone for the next one: every process in its pid
  namespace killed, the private root and its writable layer detached and
  mounted afresh, a new ipc namespace, a new uid. That costs two mounts'
  worth less than a new clone: the fork from the zygote, the namespaces and
  the copy-on-write faults of a fresh process are paid once per clone, not
  once per one-shot. It keeps one exec child forked ahead of time (a
  "standby"), reaps and kills, and reports each exec's end to the engine.
* **exec child**: forked before any job exists, it applies rlimits, enters the
  private root (chroot, while still root), drops to
  the clone's unprivileged uid and closes stray fds, then waits for its one
  job, which the engine sends it directly (no hop through the clone); it puts
  the job's output pipe on fds 1 and 2, writes ``files``, seeds ``random`` and
  runs the code (or ``/bin/sh -c``). The clone forks the next standby once it
  has reported the exec.

Messages are JSON over SOCK_SEQPACKET sockets (one message per datagram);
file descriptors travel as SCM_RIGHTS.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import ctypes
import fcntl
import gc
import io
import json
import os
import random
import resource
import selectors
import signal
import socket
import struct
import sys
import time
import traceback
import types

TYPE_CHECKING = False
if TYPE_CHECKING:  # never at run time: the zygote stays free of the typing module
    from typing import Any, NoReturn

    Msg = dict[str, Any]

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_BIND = 0x1000
MS_MOVE = 0x2000
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
SIOCSIFFLAGS = 0x8914
IFF_UP_LOOPBACK_RUNNING = 0x1 | 0x8 | 0x40
MAX_MSG = 1 << 16
ACK_FD = 1000  # where an exec child keeps its report pipe (out of the way of user fds)
STANDBY_DELAY_S = 0.02  # see CloneServer.report
# A namespaced clone's own scaffolding (a small tmpfs over /tmp in its mount
# namespace, never visible to the code): the code's private root is mounted
# at GEN_ROOT, the writable layer under it lives in the GEN_LAYER tmpfs, and
# the pid namespace's /proc is mounted once at CLONE_PROC.
GEN_ROOT = "/tmp/root"
GEN_LAYER = "/tmp/gen"
CLONE_PROC = "/tmp/proc"

_libc = ctypes.CDLL(None, use_errno=True)


def set_process_name(name: bytes) -> None:
    """Name this process's role in ps/top/perf (a forked child keeps its
    parent's name otherwise, and every role would read "python")."""
    _libc.prctl(PR_SET_NAME, ctypes.c_char_p(name), 0, 0, 0)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(src: str | None, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    _check(
        _libc.mount(
            src.encode() if src else None,
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        "mount " + target,
    )


def send(sock: socket.socket, msg: Msg, fds: tuple[int, ...] | list[int] = ()) -> None:
    data = json.dumps(msg).encode()
    if fds:
        socket.send_fds(sock, [data], list(fds))
    else:
        sock.send(data)


def recv(sock: socket.socket) -> tuple[Msg | None, list[int]]:
    """One message and its fds; (None, []) at EOF."""
    data, fds, _flags, _addr = socket.recv_fds(sock, MAX_MSG, 4)
    if not data:
        for fd in fds:
            os.close(fd)
        return None, []
    return json.loads(data), fds


# --------------------------------------------------------------------- zygote


class Zygote:
    def __init__(self, ctl: socket.socket) -> None:
        self.ctl = ctl
        self.own_pidns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)

    def serve(self) -> NoReturn:
        # Clones are reaped by the kernel: the engine talks to them directly.
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)
        while True:
            msg, fds = recv(self.ctl)
            if msg is None:
                os._exit(0)
            try:
                pid = self.spawn(msg, fds[0], fds[1], fds[2] if len(fds) > 2 else -1)
                send(self.ctl, {"op": "cloned", "req": msg["req"], "pid": pid})
            except OSError as exc:
                send(self.ctl, {"op": "error", "req": msg["req"], "error": str(exc)})
            finally:
                for fd in fds:
                    os.close(fd)

    def spawn(self, spec: Msg, clone_fd: int, jobs_fd: int, netns_fd: int) -> int:
        ns = spec["mode"] == "ns"
        if ns:
            _check(_libc.unshare(CLONE_NEWPID), "unshare(pid)")
        try:
            pid = os.fork()
        except BaseException:
            if ns:
                _check(_libc.setns(self.own_pidns, CLONE_NEWPID), "setns(pid)")
            raise
        if pid != 0 and ns:
            # back to our own pid namespace for the next fork
            _check(_libc.setns(self.own_pidns, CLONE_NEWPID), "setns(pid)")
        if pid == 0:
            code = 70
            try:
                os.close(self.ctl.fileno())
                os.close(self.own_pidns)
                sock = socket.socket(fileno=os.dup(clone_fd))
                jobs = os.dup(jobs_fd)
                os.close(clone_fd)
                os.close(jobs_fd)
                netns = os.dup(netns_fd) if netns_fd >= 0 else -1
                CloneServer(spec, sock, jobs, netns).run()
                code = 0
            except (BrokenPipeError, ConnectionResetError):
                code = 0  # the engine let go of this clone (e.g. closed while it was forming)
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(code)
        return pid


# ---------------------------------------------------------------------- clone


class CloneServer:
    def __init__(self, spec: Msg, sock: socket.socket, jobs: int, netns_fd: int = -1) -> None:
        self.netns_fd = netns_fd  # a recycled, empty net namespace to join
        self.spec = spec
        self.sock = sock
        # the engine sends jobs straight to the standby exec child on this
        # socket; the clone only keeps it to hand it to the next standby
        self.jobs_sock = socket.socket(fileno=jobs)
        self.jobs = jobs
        self.ns = spec["mode"] == "ns"
        self.uid = spec.get("uid")
        self.workdir = spec["workdir"]
        # the standby (or running) exec child: pid, ack pipe, fork ms
        self.child: tuple[int, int, float] | None = None
        self.reported: set[int] = set()
        self.idle_deaths = 0  # standbys in a row that died without a job
        # when the next standby is due (see report); None: not waiting for one
        self.standby_due: float | None = None
        self.app_pid: int | None = None
        self.killing = False
        self.held: list[Msg] = []
        self.ack = b""
        self.sel = selectors.DefaultSelector()
        self.exposed: list[tuple[str, list[tuple[str, int]]]] = []
        self.staged: list[tuple[str, str]] = []  # (private dir, its stand-in)

    def run(self) -> None:
        set_process_name(b"collimate-clone")
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        try:
            os.setsid()
            if self.ns:
                self.enter_sandbox()
                os.chdir("/")
            else:
                _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
                os.chdir(self.workdir)
        except OSError as exc:
            send(self.sock, {"op": "error", "error": str(exc)})
            return
        sig_r, sig_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(sig_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.sig_r = sig_r
        self.sel.register(self.sock, selectors.EVENT_READ, "ctl")
        self.sel.register(sig_r, selectors.EVENT_READ, "sig")
        app = self.spec.get("app")
        if app:
            self.app_pid = self.start_app(app)
        gc.collect()
        gc.freeze()
        normal_priority(self.spec)
        self.fork_standby()
        send(self.sock, {"op": "ready"})
        while True:
            timeout = None
            if self.standby_due is not None:
                timeout = max(0.0, self.standby_due - time.monotonic())
            events = self.sel.select(timeout)
            if self.standby_due is not None and (
                time.monotonic() >= self.standby_due or any(k.data == "job" for k, _ in events)
            ):
                self.fork_standby()
            for key, _ in events:
                if key.data == "job":
                    continue  # the job is the standby's to read
                if key.data == "sig":
                    try:
                        while os.read(sig_r, 512):
                            pass
                    except BlockingIOError:
                        pass
                    self.reap()
                else:
                    msg, fds = recv(self.sock)
                    if msg is None or msg["op"] == "close":
                        self.kill_all()
                        return
                    if msg["op"] == "kill":
                        self.kill_all(spare_app=True, req=int(msg["req"]))
                    elif msg["op"] == "reset":
                        self.reset(msg.get("uid"))
                    for fd in fds:
                        os.close(fd)

    # -- isolation, paid once per clone

    def enter_sandbox(self) -> None:
        """The namespaces and the scaffolding, once per clone; then the first
        private root (``mount_generation``)."""
        flags = CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS
        if self.spec["own_net"] and self.netns_fd < 0:
            flags |= CLONE_NEWNET
        _check(_libc.unshare(flags), "unshare")
        if self.spec["own_net"] and self.netns_fd >= 0:
            # a net namespace whose previous clone is entirely gone: cheaper than a new one
            _check(_libc.setns(self.netns_fd, CLONE_NEWNET), "setns(net)")
        if self.netns_fd >= 0:
            os.close(self.netns_fd)
            self.netns_fd = -1
        # Every mount private to us, read-only and nosuid, in one call.
        attr = struct.pack("QQQQ", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0, MS_PRIVATE, 0)
        buf = ctypes.create_string_buffer(attr, len(attr))
        _check(
            _libc.syscall(
                SYS_MOUNT_SETATTR, AT_FDCWD, b"/", AT_RECURSIVE, buf, ctypes.c_size_t(len(attr))
            ),
            "mount_setattr",
        )
        # kept for every generation: the scaffolding hides the host's /tmp
        self.exposed = self.open_exposed()
        _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=700")
        for path in (GEN_LAYER, GEN_ROOT, CLONE_PROC):
            os.mkdir(path, 0o700)
        self.stage_exposed()
        _mount("proc", CLONE_PROC, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
        host = b"sandbox"
        _libc.sethostname(host, len(host))
        if self.spec["own_net"]:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", IFF_UP_LOOPBACK_RUNNING))
        self.mount_generation()

    def mount_generation(self) -> None:
        """A fresh private root at GEN_ROOT: the host root file system as the
        read-only lower layer of an overlay whose upper layer lives in a new
        tmpfs (GEN_LAYER). "/" itself belongs to the generation's uid, so its
        code may make top-level dirs (/task, /workspace) as in a VM, while
        everything the host owns (/etc, /usr, ...) stays unwritable to it."""
        size = self.spec["tmp_bytes"]
        _mount("tmpfs", GEN_LAYER, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=700")
        for name in ("upper", "work"):
            os.mkdir(f"{GEN_LAYER}/{name}", 0o755)
        if self.uid is not None:
            os.chown(GEN_LAYER + "/upper", self.uid, self.uid)
        new = GEN_ROOT
        _mount(
            "overlay",
            new,
            "overlay",
            MS_NOSUID | MS_NODEV,
            f"lowerdir=/,upperdir={GEN_LAYER}/upper,workdir={GEN_LAYER}/work",
        )
        for mnt in self.spec.get("binds", []):  # other host file systems, read-only
            if os.path.isdir(mnt):
                os.makedirs(new + mnt, exist_ok=True)
                _mount(mnt, new + mnt, None, MS_BIND | MS_REC, None)
        tmp_opts = f"size={size},nr_inodes=65536,mode=1777"
        _mount("tmpfs", new + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, tmp_opts)
        self.expose_interpreter(new)
        if os.path.isdir(new + "/dev/shm"):
            _mount("tmpfs", new + "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777")
        _mount(CLONE_PROC, new + "/proc", None, MS_BIND, None)
        if self.workdir != "/tmp":
            os.makedirs(new + self.workdir, exist_ok=True)
        if self.uid is not None:
            os.chown(new + self.workdir, self.uid, self.uid)

    def reset(self, uid: int | None) -> None:
        """Wipe this clone for its next user (see the module docstring): kill
        everything, detach the private root with every mount under it (the
        kernel frees them once nothing uses them: nothing does, all its
        processes are dead), then mount a new one for ``uid``. Answers
        ``ready``, or ``error`` (the engine then destroys the clone)."""
        # background work, like making a clone: it must not slow running execs
        idle_priority(self.spec)
        try:
            if not self.ns or self.app_pid is not None:
                raise OSError(0, "only a namespaced clone without an app can be reset")
            self.kill_all()
            if self.processes():
                raise OSError(0, "processes survived the kill")
            _check(_libc.umount2(GEN_ROOT.encode(), MNT_DETACH), "umount " + GEN_ROOT)
            _check(_libc.umount2(GEN_LAYER.encode(), MNT_DETACH), "umount " + GEN_LAYER)
            # System V ipc objects outlive their processes: a new namespace drops them
            _check(_libc.unshare(CLONE_NEWIPC), "unshare(ipc)")
            self.uid = uid
            self.spec["uid"] = uid
            self.reported.clear()
            self.idle_deaths = 0
            self.mount_generation()
        except OSError as exc:
            normal_priority(self.spec)
            send(self.sock, {"op": "error", "error": f"reset failed: {exc}"})
            return
        self.fork_standby()  # (ends at normal priority)
        send(self.sock, {"op": "ready"})

    def open_exposed(self) -> list[tuple[str, list[tuple[str, int]]]]:
        """O_PATH handles on the interpreter's trees, taken while the host's
        paths are still visible (see ``expose_interpreter``)."""
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
            _mount("tmpfs", stage, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755")
            for tree, fd in trees:
                target = stage + tree[len(private) :]
                os.makedirs(target, exist_ok=True)
                _mount(f"/proc/self/fd/{fd}", target, None, MS_BIND | MS_REC, None)
            self.staged.append((private, stage))

    def expose_interpreter(self, root: str) -> None:
        """Bind the staged trees (see ``stage_exposed``) into a new root."""
        for private, stage in self.staged:
            _mount(stage, root + private, None, MS_BIND | MS_REC, None)
        for private, trees in self.exposed:
            if private != "/tmp":
                continue
            for tree, fd in trees:
                os.makedirs(root + tree, exist_ok=True)
                _mount(f"/proc/self/fd/{fd}", root + tree, None, MS_BIND | MS_REC, None)

    # -- execs

    def fork_standby(self) -> None:
        """Fork the next exec child ahead of time: it gets as far as it can
        without the job (rlimits, uid drop, fds) and then waits for the job
        on the jobs socket, so the fork is off the exec's latency path."""
        if self.standby_due is not None:
            self.standby_due = None
            self.sel.unregister(self.jobs)
        if self.child is not None:
            return
        ack_r, ack_w = os.pipe2(os.O_CLOEXEC)
        os.set_blocking(ack_r, False)
        t0 = time.perf_counter()
        # ahead-of-time work: it must not delay the engine's answer (see
        # normal_priority for how the child gets back before it waits)
        idle_priority(self.spec)
        try:
            pid = os.fork()
            if pid == 0:
                exec_child(self.spec, self.jobs, ack_w, t0)  # never returns
        finally:
            normal_priority(self.spec)
        os.close(ack_w)
        self.child = (pid, ack_r, (time.perf_counter() - t0) * 1000)
        self.ack = b""
        # Not watched: the engine has the child's records first-hand, so the
        # clone reads them once it reaps the child (an exec's end costs the
        # clone one wake-up, not one per record), and a flood of writes to
        # the pipe fills it rather than the clone's memory.

    def read_ack(self) -> None:
        """The exec child's reports, read once it is reaped: ``R<req>`` once
        it had its job, ``S<seed>`` once it seeded (both before any code of
        the job ran), then ``E<code>`` once the code was done."""
        if self.child is None:
            return
        try:
            while True:
                data = os.read(self.child[1], 1 << 16)
                if not data:
                    break
                self.ack += data
        except (BlockingIOError, ValueError):
            pass
        _head, sep, tail = self.ack.rpartition(b"\nE")
        if sep and tail.endswith(b"\n") and tail[:-1].isdigit():
            self.report(int(tail[:-1]), 0, None)

    def acked(self) -> tuple[int | None, str]:
        """(req, seed) as the child wrote them before the job's code ran."""
        head, sep, rest = self.ack.partition(b"\n")
        if not sep or not head.startswith(b"R") or not head[1:].isdigit():
            return None, ""
        seed = rest[1:65].decode("ascii", "replace") if rest.startswith(b"S") else ""
        return int(head[1:]), seed

    def reap(self) -> None:
        while True:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if self.child is not None and pid == self.child[0]:
                self.finish(status, usage)
            elif pid == self.app_pid:
                self.app_pid = None

    def finish(self, status: int, usage: resource.struct_rusage) -> None:
        """The exec child was reaped before it reported (killed, os._exit, a shell)."""
        self.read_ack()
        if self.child is None:
            return
        if os.WIFSIGNALED(status):
            code, sig = 128 + os.WTERMSIG(status), os.WTERMSIG(status)
        else:
            code, sig = os.waitstatus_to_exitcode(status), 0
        self.report(code, sig, (usage.ru_utime + usage.ru_stime) * 1000)

    def report(self, code: int, sig: int, cpu_ms: float | None) -> None:
        if self.child is None:
            return
        _pid, ack_r, fork_ms = self.child
        self.child = None
        os.close(ack_r)
        req, seed = self.acked()
        if req is not None and req not in self.reported:
            self.reported.add(req)
            report = {
                "op": "exited",
                "req": req,
                "exit_code": code,
                "signal": sig,
                "seed": seed,
                "fork_ms": fork_ms,
                "cpu_ms": cpu_ms,
            }
            if self.killing:
                self.held.append(report)  # told only once the whole tree is gone
            else:
                send(self.sock, report)
        # A standby that died before it got a job has nothing to report; one
        # that cannot even get that far is not re-forked for ever.
        self.idle_deaths = 0 if req is not None else self.idle_deaths + 1
        if self.killing or self.idle_deaths >= 3:
            return
        if req is None:
            self.fork_standby()
        elif self.standby_due is None:
            # After an exec the next standby waits a little: most clones are
            # one-shots, closed right after their exec, and a fork then would
            # only compete with the answer. A job arriving first (a session's
            # next exec) makes the jobs socket readable: forked at once then.
            self.standby_due = time.monotonic() + STANDBY_DELAY_S
            self.sel.register(self.jobs, selectors.EVENT_READ, "job")

    def kill_all(self, *, spare_app: bool = False, req: int | None = None) -> None:
        """Kill every process this clone started (the exec's tree and strays,
        the standby, and the app server unless ``spare_app``); return only
        once none of them is alive (a SIGKILLed process still exists until it
        has exited). ``req``: the exec being killed, reported even if no
        child had picked it up yet."""
        self.killing = True
        try:
            self._kill_all(spare_app)
        finally:
            self.killing = False
            self.drop_pending_jobs()
            if req is not None and req not in self.reported and not any(
                r["req"] == req for r in self.held
            ):
                self.reported.add(req)
                self.held.append(
                    {"op": "exited", "req": req, "exit_code": 128 + 9, "signal": 9, "seed": ""}
                )
            held, self.held = self.held, []
            for report in held:
                with contextlib.suppress(OSError):  # the engine may be gone already
                    send(self.sock, report)
            if spare_app:
                self.fork_standby()

    def drop_pending_jobs(self) -> None:
        """A killed job nobody picked up must not reach the next standby."""
        # (recvmsg, not socket.recv_fds: that one ignores its flags before 3.12,
        # and O_NONBLOCK would be shared with the standby's blocking read)
        space = socket.CMSG_SPACE(4 * 4)
        while True:
            try:
                data, anc, _flags, _addr = self.jobs_sock.recvmsg(
                    MAX_MSG, space, socket.MSG_DONTWAIT
                )
            except OSError:  # BlockingIOError: nothing pending
                return
            for level, kind, payload in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    usable = len(payload) - len(payload) % 4
                    for (fd,) in struct.iter_unpack("i", payload[:usable]):
                        os.close(fd)
            if not data:
                return

    def _kill_all(self, spare_app: bool) -> None:
        if self.ns and not (spare_app and self.app_pid is not None):
            self._kill_namespace()
            return
        deadline = time.monotonic() + 3.0
        while True:
            victims = [
                pid
                for pid, sid in self.processes()
                if not (spare_app and self.app_pid is not None and sid == self.app_pid)
            ]
            if not victims:
                self.reap()
                if self.child is None or time.monotonic() > deadline:
                    return
            for pid in victims:
                for fn in (os.killpg, os.kill):
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        fn(pid, signal.SIGKILL)
            self.reap()
            if time.monotonic() > deadline:
                return
            time.sleep(0.001)

    def _kill_namespace(self) -> None:
        """Everything but us, the cheap way: pid 1 of a pid namespace kills
        all its other processes with one kill(-1), and every one of them is
        our child or was re-parented to us, so "no child left" is "none left"."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)
        deadline = time.monotonic() + 3.0
        while True:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                if time.monotonic() > deadline:
                    return
                time.sleep(0.0005)
                continue
            if self.child is not None and pid == self.child[0]:
                self.finish(status, usage)
            elif pid == self.app_pid:
                self.app_pid = None

    def processes(self) -> list[tuple[int, int]]:
        """(pid, session id) of every live process of this clone but itself."""
        proc = CLONE_PROC if self.ns else "/proc"
        if self.ns:  # our pid namespace's own /proc: every process in it is ours
            pids = [int(e) for e in os.listdir(proc) if e.isdigit() and e != "1"]
        else:
            # every descendant: orphans were re-parented to us (we are their subreaper)
            pids, frontier = [], [os.getpid()]
            while frontier:
                kids = _children_of(frontier.pop())
                pids.extend(kids)
                frontier.extend(kids)
        found: list[tuple[int, int]] = []
        for pid in pids:
            try:
                with open(f"{proc}/{pid}/stat", "rb") as fh:
                    fields = fh.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if fields[0] not in (b"Z", b"X"):
                found.append((pid, int(fields[3])))
        return found

    def start_app(self, app: Msg) -> int:
        pid = os.fork()
        if pid == 0:
            try:
                prepare_child(self.spec, None, limits=app["limits"], cpu=False)
                env = child_env(self.spec, None)
                os.execve("/bin/sh", ["/bin/sh", "-c", app["command"]], env)
            except BaseException:
                traceback.print_exc()
            os._exit(127)
        return pid


def _children_of(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return kids
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                kids.extend(int(k) for k in fh.read().split())
        except OSError:
            continue
    return kids


# ----------------------------------------------------------------- exec child


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


def child_env(spec: Msg, seed: str | None) -> dict[str, str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
        "HOME": spec["workdir"],
        "TMPDIR": spec["workdir"] if spec["mode"] != "ns" else "/tmp",
        "LANG": "C.UTF-8",
        "PWD": spec["workdir"],
    }
    if seed:
        env["COLLIMATE_SEED"] = seed
    return env


def prepare_child(spec: Msg, out_fd: int | None, limits: Msg, cpu: bool = True) -> None:
    """Process-level setup shared by execs and app servers (after fork)."""
    os.setsid()
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
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_size_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
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


def write_files(spec: Msg, files: list[list[str]]) -> str | None:
    for path, content in files:
        norm = os.path.normpath(path) if path else ""
        bad = not norm or "\x00" in path or norm in (".", "/")
        if not os.path.isabs(norm):
            bad = bad or norm == ".." or norm.startswith("../")
            target = os.path.join(spec["workdir"], norm)
        else:
            # namespaces: the clone's private root; process mode (NOT a sandbox): the
            # host's, as the server's user (the engine removes them when the clone closes)
            target = norm
        if bad:
            return f"collimate: refusing to write {path!r}: outside the clone\n"
        try:
            parent = os.path.dirname(target)
            if parent:
                os.makedirs(parent, exist_ok=True)
            with open(target, "w", encoding="utf-8") as fh:
                fh.write(content)
        except OSError as exc:
            return f"collimate: cannot write {path!r}: {exc.strerror or exc}\n"
    return None


def exec_child(spec: Msg, jobs_fd: int, ack_w: int, forked_at: float) -> NoReturn:
    """A standby exec child: set up everything that does not depend on the
    job, wait for it, run it, report on ``ack_w`` (see ``CloneServer.read_ack``).

    The job brings a second report pipe, straight to the engine: the same
    seed and end records go there too, so the engine can answer without
    waiting for the clone to relay them (one process wake-up less on every
    exec). The clone's relay stays the authority for a child that dies
    without a record (killed, crashed, or replaced by ``/bin/sh``)."""
    code = 1
    fork_ms = (time.perf_counter() - forked_at) * 1000
    reports = Reports(ack_w, -1)
    try:
        set_process_name(b"collimate-exec")
        prepare_child(spec, None, spec["limits"])
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        high = max(4, min(ACK_FD, soft - 1)) if soft > 0 else ACK_FD
        os.dup2(ack_w, high)
        os.dup2(jobs_fd, high - 1)
        os.closerange(3, high - 1)
        os.closerange(high + 1, 1 << 16)
        # a full pipe (code writing to it) must not block the end record
        os.set_blocking(high, False)
        reports = Reports(high, -1)
        touch_ahead()
        jobs = socket.socket(fileno=high - 1)
        msg, fds = recv(jobs)
        # the code must never see the jobs socket (it could steal a later job)
        jobs.close()
        if msg is None or len(fds) != 3:
            os._exit(0)
        out_fd, job_fd, result_fd = fds
        os.dup2(result_fd, high - 1)  # where the jobs socket was: out of the code's way
        os.close(result_fd)
        reports = Reports(high, high - 1, f"F{fork_ms:.3f}\n")
        reports.write(f"R{int(msg['req'])}\n", "")
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
        os.close(out_fd)
        # the job body (source, files) comes in a memfd: no size limit on the socket
        size = os.fstat(job_fd).st_size
        chunks: list[bytes] = []
        done = 0
        while done < size:
            chunk = os.pread(job_fd, size - done, done)
            if not chunk:
                break
            chunks.append(chunk)
            done += len(chunk)
        os.close(job_fd)
        msg.update(json.loads(b"".join(chunks)))
        env = child_env(spec, msg["seed"])
        err = write_files(spec, msg["files"])
        if err is not None:
            os.write(2, err.encode())
            os._exit(1)
        if msg["kind"] == "command":
            reports.close()
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
            os.execve("/bin/sh", ["/bin/sh", "-c", msg["source"]], env)
        # the zygote started with an empty environment: only ours to add
        for key, value in env.items():
            if os.environ.get(key) != value:
                os.environ[key] = value
        code = run_python(msg, reports)
    except SystemExit as exc:
        code = exit_code_of(exc)
    except BaseException:
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
        with contextlib.suppress(OSError):
            # output closed first, then "done": the clone can answer right away
            os.close(1)
            os.close(2)
        reports.write(f"\nE{code & 0xFF}\n")
        # reported: what is left (the exit's teardown) must not compete with
        # the answer on its way (dropping to the idle class needs no privilege)
        with contextlib.suppress(OSError, AttributeError):
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        os._exit(code)


class Reports:
    """An exec child's records, to the clone (``ack``) and straight to the
    engine (``result``). Both stay open while the code runs, which may
    append to them but not undo what was written before it ran (the job's
    number, the seed): what it can fake, an early end, it could as well
    do by exiting."""

    def __init__(self, ack: int, result: int, result_prefix: str = "") -> None:
        self.fds = [ack, result]
        # sent with the first result record: every write wakes the engine
        self.prefix = result_prefix

    def write(self, text: str, result_text: str | None = None) -> None:
        result_text = text if result_text is None else result_text
        if result_text:
            result_text, self.prefix = self.prefix + result_text, ""
        # the engine's first: it answers on it
        for fd, part in ((self.fds[1], result_text), (self.fds[0], text)):
            if fd < 0 or not part:
                continue
            with contextlib.suppress(OSError):  # a reader gone (the exec was killed)
                os.write(fd, part.encode())

    def close(self) -> None:
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds = [-1, -1]


def run_python(msg: Msg, reports: Reports) -> int:
    random.seed(int(msg["seed"], 16))
    reports.write("S" + msg["seed"], "S" + msg["seed"] + "\n")
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(line_buffering=True)
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main
    sys.argv[:] = ["-c"]
    code = 0
    try:
        exec(compile(msg["source"], "<string>", "exec"), main.__dict__)
    except SystemExit as exc:
        code = exit_code_of(exc)
    except BaseException as exc:
        tb = exc.__traceback__
        traceback.print_exception(type(exc), exc, tb.tb_next if tb is not None else None)
        code = 1
    try:
        threading = sys.modules.get("threading")
        if threading is not None:
            threading._shutdown()
        atexit._run_exitfuncs()
    except SystemExit as exc:
        code = exit_code_of(exc)
    return code


def exit_code_of(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    with contextlib.suppress(BaseException):
        sys.stderr.write(f"{exc.code}\n")
    return 1


_WARM_UP_SOURCE = """
import random
values = [random.random() for _ in range(8)]
def f(a, *args, **kw):
    return {"a": a, "args": args, "kw": kw}
class C:
    def __init__(self):
        self.x = f(1, 2, k=3)
try:
    raise ValueError(C().x)
except ValueError as exc:
    message = str(exc)
print(message, sorted(values)[0] >= 0)
"""


def warm_up() -> None:
    """Initialise what the first exec would otherwise pay for in every clone.

    The parser, compiler, ``random`` seeding, ``print`` and traceback
    formatting all build state lazily; done here once, it is shared
    copy-on-write. ``gc.freeze()`` then moves every object to a generation
    the collector never walks, so a child's GC does not touch (and copy) the
    pages of the objects it inherited.
    """
    sink = io.StringIO()
    for _ in range(3):
        random.seed(int("ab" * 32, 16))
        code = compile(_WARM_UP_SOURCE, "<string>", "exec")
        exec(code, {"__name__": "__main__", "print": lambda *a: sink.write(repr(a))})
        try:
            raise RuntimeError("warm")
        except RuntimeError as exc:
            traceback.print_exception(type(exc), exc, exc.__traceback__, file=sink)
        json.loads(json.dumps({"source": "x", "files": [["a", "b"]]}))
    gc.collect()
    gc.freeze()


def touch_ahead() -> None:
    """A standby's copy-on-write faults, taken before its job arrives.

    A forked child shares every page with its parent until it writes to it,
    and a Python child writes to most pages it reads (reference counts, type
    caches, the allocator's free lists): each first write is a page fault and
    a copy, about a millisecond of them for a small exec, all on the latency
    path. Running a tiny program here takes most of them ahead of time; it
    leaves nothing the job could see (``random`` is re-seeded, ``__main__``
    replaced, the output goes nowhere)."""
    sink = io.StringIO()
    code = compile(_WARM_UP_SOURCE, "<string>", "exec")
    exec(code, {"__name__": "__main__", "print": lambda *a: sink.write(repr(a))})
    json.loads(json.dumps({"op": "exec", "req": 1, "kind": "code", "seed": "ab" * 32}))


def preload(entry: str) -> None:
    """Import ``entry`` ahead of time: a module name, or ``name=/path/file.py``
    to run that one file as module ``name`` without importing the package
    around it (the SDK's grader runtime: its package would pull in an HTTP
    client, and every page of a bigger zygote is one more to fork)."""
    name, sep, path = entry.partition("=")
    if not sep:
        __import__(name)
        return
    with open(path, "rb") as fh:
        code = compile(fh.read(), path, "exec", dont_inherit=True)
    module = types.ModuleType(name)
    module.__file__ = path
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    except BaseException:
        del sys.modules[name]
        raise


def _exit(code: object = None) -> NoReturn:
    raise SystemExit(code)


def main() -> None:
    config = json.loads(sys.argv[1])
    set_process_name(b"collimate-zygote")
    sys.path[:] = config["sys_path"]
    # -S skipped site: give code the two builtins people expect from it
    builtins.exit = builtins.quit = _exit  # type: ignore[assignment]
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != config["parent"]:
        os._exit(0)
    failed = []
    for name in config["preload"]:
        try:
            preload(name)
        except Exception as exc:
            failed.append(f"{name}: {exc}")
    warm_up()
    ctl = socket.socket(fileno=config["ctl_fd"])
    send(ctl, {"op": "hello", "pid": os.getpid(), "preload_failed": failed})
    Zygote(ctl).serve()


if __name__ == "__main__":
    main()
