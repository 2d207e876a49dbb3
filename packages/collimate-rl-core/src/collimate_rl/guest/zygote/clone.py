"""A clone: serves one session (or one-shot exec) at a time.

In ``ns`` mode it is pid 1 of its own pid namespace and owns mount, ipc, uts
and optionally net namespaces, in which it mounts the code's private root
(``private_root``). The clone itself never runs the code; only its exec
children enter the private root. So once a session is over, a ``reset``
wipes the clone for the next one: every process in its pid namespace killed,
the private root and its writable layer detached and mounted afresh, a new
ipc namespace, a new uid. The fork from the zygote, the namespaces and the
copy-on-write faults of a fresh process are paid once per clone, not once
per one-shot.

It keeps one exec child forked ahead of time (a "standby", see
``exec_child``), reaps and kills, and reports each exec's end to the engine
(which usually has it first-hand already, from the child).
"""

from __future__ import annotations

import contextlib
import gc
import os
import selectors
import signal
import socket
import struct
import time
import traceback

from .child_setup import child_env, idle_priority, join_cgroups, normal_priority, prepare_child
from .exec_child import exec_child
from .kernel import set_child_subreaper, set_process_name
from .messages import MAX_MSG, recv, send
from .private_root import CLONE_PROC, PrivateRoot

TYPE_CHECKING = False
if TYPE_CHECKING:  # never at run time: the zygote stays free of the typing module
    import resource
    from typing import Any

    Msg = dict[str, Any]

STANDBY_DELAY_S = 0.02  # see CloneServer.report


class CloneServer:
    """One clone: its namespaces, its standby exec child, its reports."""

    def __init__(self, spec: Msg, sock: socket.socket, jobs: int, netns_fd: int = -1) -> None:
        self.spec = spec
        self.sock = sock
        # the engine sends jobs straight to the standby exec child on this
        # socket; the clone only keeps it to hand it to the next standby
        self.jobs_sock = socket.socket(fileno=jobs)
        self.jobs = jobs
        self.ns = spec["mode"] == "ns"
        self.root = PrivateRoot(spec, netns_fd) if self.ns else None
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

    def run(self) -> None:
        set_process_name(b"collimate-clone")
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        try:
            os.setsid()
            join_cgroups(self.spec)
            if self.root is not None:
                self.root.enter(self.uid)
                os.chdir("/")
            else:
                set_child_subreaper()
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

    # -- generations

    def reset(self, uid: int | None) -> None:
        """Wipe this clone for its next user (see ``private_root``): kill
        everything, detach the private root with every mount under it (the
        kernel frees them once nothing uses them: nothing does, all its
        processes are dead), then mount a new one for ``uid``. Answers
        ``ready``, or ``error`` (the engine then destroys the clone)."""
        # background work, like making a clone: it must not slow running execs
        idle_priority(self.spec)
        try:
            if self.root is None or self.app_pid is not None:
                raise OSError(0, "only a namespaced clone without an app can be reset")
            self.kill_all()
            if self.processes():
                raise OSError(0, "processes survived the kill")
            self.root.wipe()
            self.uid = uid
            self.spec["uid"] = uid
            self.reported.clear()
            self.idle_deaths = 0
            self.root.mount_generation(uid)
        except OSError as exc:
            normal_priority(self.spec)
            send(self.sock, {"op": "error", "error": f"reset failed: {exc}"})
            return
        self.fork_standby()  # (ends at normal priority)
        send(self.sock, {"op": "ready"})

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
        # ahead-of-time work: it must not delay the engine's answer (the
        # child leaves the idle class just before it waits for its job, see
        # exec_child and child_setup.enter_private_root)
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
        """Every child that has exited, reaped and accounted for."""
        while self.reap_one() == "reaped":
            pass

    def reap_one(self) -> str:
        """Reap one exited child: ``reaped``, ``running`` (children, none
        exited yet) or ``none`` (no child left)."""
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return "none"
        if pid == 0:
            return "running"
        if self.child is not None and pid == self.child[0]:
            self.finish(status, usage)
        elif pid == self.app_pid:
            self.app_pid = None
        return "reaped"

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
            if (
                req is not None
                and req not in self.reported
                and not any(r["req"] == req for r in self.held)
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
        while (state := self.reap_one()) != "none":
            if state == "running":
                if time.monotonic() > deadline:
                    return
                time.sleep(0.0005)

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
                env.update(app.get("env") or {})  # the session's own (service.session_env)
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
