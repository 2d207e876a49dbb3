"""Packs: several candidates graded by one exec, one after another, each
as it would be graded alone."""

# The guest may run Python 3.8 with nothing imported beyond its preload:
# no zip(strict=), no contextlib, and %-formatting is as good as any.
# ruff: noqa: UP031, SIM105, B905
from __future__ import annotations

import os
import signal
import sys
import time

from .budget import _Budget, _Results
from .entry import _drawn_once, _private_rng, _verdict
from .kinds import _load_module, _read_candidate
from .process import _collect, _report, _SpawnerGone, _stay_on_turn_cpu
from .sweep import _become_subreaper, _Files, _kill_descendants, _not_dedicated
from .wire import _Frame, _mute, _Outbox, _verdict_json

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - typing only, never imported in the guest
    from typing import Any, NoReturn


_PRECOMPILE_MAX = 1 << 16  # a bigger candidate compiles under its budget

_SPAWNER_ANSWER_S = 10.0  # a spawner silent this long is taken for gone

# Verdicts are written in batches, at most this far apart: each write wakes
# the backend reading the exec's output (on another CPU, where the other
# pack runs). Held verdicts die with a grader a candidate kills: those
# candidates are graded alone, as the rest of that pack are.
_FLUSH_S = 0.25


def _pack(cfg: dict[str, Any], how: str) -> NoReturn:
    """Grade ``cfg["pack"]``'s candidates one after another, each as a lone
    grade would be (its seed, its budget, its own process), and frame each
    verdict with the candidate's own nonce (written in batches, at most
    ``_FLUSH_S`` apart).

    A candidate that runs out of its time budget ends the pack too: behind
    it, the rest would take up to one budget each.

    The candidates' processes are forked by a spawner (``_Spawner``), a
    process forked once with everything they need, so the grader never
    forks again and its own work copies no pages. Between two candidates
    everything the last one left is swept away: its processes (the spawner
    is their child subreaper, so even a daemonised one comes back to it)
    and the files it made where the guest's uid can write (``_Files``).
    What cannot be undone (a file that was there before and is gone or
    replaced, a System V object) ends the pack with an ``unpacked`` frame:
    the SDK grades every candidate without a verdict alone, in a clone of
    its own, as it does when the pack dies (a candidate killing the grader
    or the spawner) or cannot start (a shared guest, no subreaper)."""
    import random

    frame = _Frame(cfg["marker"] + cfg["nonce"])
    frame.line("hello")
    items = cfg["pack"]
    # every candidate is read (and unlinked) before any runs: none can touch another's
    jobs = []
    drawn: dict[str, Any] = {}
    for item in items:
        item_cfg = dict(cfg, path=item["path"], size=item["size"], crc=item["crc"], pack=None)
        data = _precompiled(_read_candidate(item_cfg), item_cfg["path"])
        rng = None  # a property's cases are drawn once per seed, by the first of its candidates
        if item_cfg["kind"] == "property" and item["seed"] not in drawn:
            random.seed(int(item["seed"], 16))  # as the backend seeds a lone grade's exec
            rng = _private_rng(item_cfg)
        cases = _drawn_once(drawn, item_cfg, item["seed"], rng)
        jobs.append((item, item_cfg, data, rng, cases))
    _mute()
    _stay_on_turn_cpu()  # (before the spawner: it and every candidate inherit it)
    why = _not_dedicated()
    files = _Files()
    spawner = None if why is not None else _Spawner(jobs, frame.fd)
    if spawner is not None:
        why = spawner.broken
    if why is not None:
        frame.line("unpacked " + why)
        frame._exit(0)
    flushed = time.monotonic()
    for index, (item, item_cfg, data, rng, cases) in enumerate(jobs):
        start = time.monotonic()
        budget = _Budget(item_cfg, start)

        def run(work: Any, budget: _Budget, index: int = index) -> _Results:
            return spawner.run(index, budget)  # type: ignore[union-attr]

        try:
            if isinstance(data, str):
                verdict = {"reward": 0.0, "delivery_error": data}
            else:
                verdict = _verdict(item_cfg, data, budget, rng, cases, run)
        except _SpawnerGone:
            frame.line("unpacked the spawner is gone (a candidate killed or stopped it)")
            break
        left_behind = spawner.left_behind or files.sweep()  # type: ignore[union-attr]
        if left_behind is None and budget.left() <= 0:
            # the rest would wait behind every candidate that loops: alone,
            # they are graded side by side
            left_behind = "a candidate ran out of its time budget"
        verdict["runtime"] = how
        verdict["seed"] = item["seed"]
        verdict["ms"] = (time.monotonic() - start) * 1000.0
        marker = cfg["marker"] + item["nonce"]
        frame.hold("hello\n" + marker + " " + _verdict_json(verdict), marker)
        if left_behind is not None:
            frame.line("unpacked " + left_behind)
            break
        if time.monotonic() - flushed >= _FLUSH_S:
            frame.flush()
            flushed = time.monotonic()
    frame.flush()
    frame._exit(0)


class _Spawner:
    """Forks the candidates' processes of a pack, on the grader's word.

    Forked once, with every candidate's job in its memory, it answers two
    requests on a socket: ``r<index>`` with a pipe's write end (fork that
    candidate's process, reply its pid) and ``w<pid>`` (kill it, reap it,
    kill whatever it left below the spawner; reply the wait status and what
    could not be killed). ``_verdict`` runs in the grader with ``run`` in
    place of ``_in_own_process``: the spawner builds the same work from the
    same job (``_<kind>_work``) and the grader collects it (``_collect``)."""

    def __init__(self, jobs: list[Any], private_fd: int) -> None:
        import socket

        self.left_behind: str | None = None
        self.broken: str | None = None
        if not hasattr(socket, "CMSG_SPACE") or not hasattr(socket.socket, "sendmsg"):
            self.broken = "this guest's Python cannot pass file descriptors"
            return
        ours, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:  # the spawner: whatever happens, it never returns into the grader
            try:
                ours.close()
                os.close(private_fd)
                _spawn_loop(theirs, jobs)
            finally:
                os._exit(70)
        theirs.close()
        self.sock = ours
        # a spawner that a candidate stopped (same uid) must not hold the pack
        ours.settimeout(_SPAWNER_ANSWER_S)
        try:
            hello = ours.recv(4096).decode("utf-8", "replace")
        except OSError:
            hello = ""
        if hello != "ok":
            self.broken = hello or "the spawner did not start"

    def run(self, index: int, budget: _Budget) -> _Results:
        import socket

        read_fd, write_fd = os.pipe()
        try:
            self.sock.sendmsg(
                [b"r%d" % index],
                [
                    (
                        socket.SOL_SOCKET,
                        socket.SCM_RIGHTS,
                        write_fd.to_bytes(_FD_SIZE, sys.byteorder),
                    )
                ],
            )
            reply = self.sock.recv(64)
        except OSError:
            reply = b""
        finally:
            os.close(write_fd)
        if not reply.isdigit():
            os.close(read_fd)
            raise _SpawnerGone()
        pid = int(reply)
        return _collect(read_fd, pid, budget, lambda: self.reap(pid))

    def reap(self, pid: int) -> int:
        try:
            self.sock.send(b"w%d" % pid)
            reply = self.sock.recv(4096).decode("utf-8", "replace")
        except OSError:
            reply = ""
        status, sep, why = reply.partition(" ")
        if not sep or not status.lstrip("-").isdigit():
            raise _SpawnerGone()
        self.left_behind = why or None
        return int(status)


def _spawn_loop(sock: Any, jobs: list[Any]) -> NoReturn:
    """The spawner's life (see ``_Spawner``)."""
    import random
    import socket

    why = _become_subreaper()
    if why is None and jobs:
        _warm_up(jobs[0][1])
    # Every page this loop writes between two forks costs a page fault
    # (fork made it read-only): what it needs is made here, once, and each
    # candidate's work only has its budget restarted when its turn comes.
    states: dict[str, Any] = {}  # seed -> the state ``random.seed(seed)`` leaves
    budgets = [_Budget(item_cfg, 0.0) for _item, item_cfg, _data, _rng, _cases in jobs]
    works = [
        globals()["_%s_work" % item_cfg["kind"]](item_cfg, data, budget, cases)
        for (_item, item_cfg, data, _rng, cases), budget in zip(jobs, budgets)
    ]
    seeded = os.environ.get("COLLIMATE_SEED")
    receive = sock.recvmsg
    room = socket.CMSG_SPACE(_FD_SIZE)
    passed = (socket.SOL_SOCKET, socket.SCM_RIGHTS)
    sock.send((why or "ok").encode())
    while why is None:
        msg, ancillary, _flags, _addr = receive(64, room)
        fd = _passed_fd(ancillary, passed)
        if not msg:
            break
        if msg[:1] == b"r" and fd is not None:
            index = int(msg[1:])
            seed = jobs[index][0]["seed"]
            state = states.get(seed)
            if state is None:
                state = states[seed] = random.Random(int(seed, 16)).getstate()
            if seeded != seed:
                os.environ["COLLIMATE_SEED"] = seeded = seed
            budgets[index].restart(time.monotonic())
            work = works[index]
            pid = os.fork()
            if pid == 0:
                try:
                    sock.close()
                    # random reseeds itself from the OS in a forked child
                    random.setstate(state)
                except BaseException:
                    os._exit(0)
                _report(work, fd)
            os.close(fd)
            sock.send(b"%d" % pid)
        elif msg[:1] == b"w":
            pid = int(msg[1:])
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                status = os.waitpid(pid, 0)[1]
            except OSError:
                status = 0
            left = _kill_descendants()
            sock.send(("%d %s" % (status, left or "")).encode())
        elif fd is not None:
            os.close(fd)
    os._exit(0)


_FD_SIZE = 4  # a file descriptor in SCM_RIGHTS data: a C int


def _passed_fd(ancillary: list[tuple[int, int, bytes]], passed: tuple[int, int]) -> int | None:
    """The file descriptor a message carried, if any (room is made for one:
    the kernel closes any more); ``passed`` is (SOL_SOCKET, SCM_RIGHTS)."""
    for level, kind, data in ancillary:
        if (level, kind) == passed and len(data) >= _FD_SIZE:
            return int.from_bytes(data[:_FD_SIZE], sys.byteorder)
    return None


def _precompiled(data: bytes | str, path: str) -> Any:
    """A delivered candidate's code object, compiled once by the grader so
    that no candidate's process pays for (and copies the pages of) the
    compiler: only a small source that compiles (the others are compiled,
    and fail, in the candidate's process under its budget, as alone)."""
    if isinstance(data, str) or len(data) > _PRECOMPILE_MAX:
        return data
    try:
        return compile(data, path, "exec", dont_inherit=True)
    except Exception:
        return data


def _warm_up(cfg: dict[str, Any]) -> None:
    """Run the candidates' code path a few dozen times in the spawner, on a
    harmless function, then freeze what it holds: the interpreter's
    specialising of that code, and the collector walking inherited
    objects, would otherwise write to (and copy) those pages in every
    candidate's process."""
    import gc

    name = "_collimate_warm_up"
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        budget = _Budget(dict(cfg, budget=60.0, test_timeout=None), time.monotonic())
        code = compile("def %s(*a, **k):\n    return a\n" % cfg["entry"], name, "exec")
        fn, _error = _load_module(dict(cfg, module=name, path=name), code, budget)
        outbox = _Outbox(null)
        for i in range(64):
            if fn is not None:
                outbox.put((i, *budget.run(fn, i)))
        outbox.put(("done",))
    except Exception:
        pass
    finally:
        sys.modules.pop(name, None)
        os.close(null)
    gc.collect()
    gc.freeze()
