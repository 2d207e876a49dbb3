"""Between two candidates of a pack: the guest put back as the pack found
it (processes killed, new files removed), or the reason it cannot be."""

# The guest may run Python 3.8 with nothing imported beyond its preload:
# no zip(strict=), no contextlib, and %-formatting is as good as any.
# ruff: noqa: UP031, SIM105
from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - typing only, never imported in the guest
    from collections.abc import Callable
    from typing import Any


# Where code of the guest's uid can leave files: what a pack's sweep watches.
_WATCHED = ("/", "/tmp", "/var/tmp", "/dev/shm")

_SYSV = ("/proc/sysvipc/shm", "/proc/sysvipc/msg", "/proc/sysvipc/sem")

_NO_IPC = (0, 0, 0)


class _Files:
    """What the guest's uid can write, as the pack found it: new entries are
    removed between two candidates, a missing or replaced one ends the pack,
    a changed mode (a candidate locking its working directory: the next
    one's tests could not write there) is set back. A directory whose
    change time did not move is not listed again."""

    def __init__(self) -> None:
        self.listings: dict[str, tuple[Any, dict[str, int]]] = {}
        self.modes: dict[str, int] = {}
        for path in (*_WATCHED, os.getcwd()):
            if path in self.listings:
                continue
            try:
                found = (_stamp(path), _listing(path)), os.lstat(path).st_mode & 0o7777
            except OSError:
                continue
            self.listings[path], self.modes[path] = found
        self.ipc = _sysv_objects()
        # none at the start (a fresh ipc namespace): then counting them is enough
        count = _sysv_counter()
        self.ipc_count = count if count is not None and count() == _NO_IPC else None

    def sweep(self) -> str | None:
        """None when the guest is as before; else what could not be undone."""
        for path, (stamp, before) in self.listings.items():
            try:
                if _stamp(path) == stamp:
                    continue
                mode = self.modes[path]
                if os.lstat(path).st_mode & 0o7777 != mode:
                    os.chmod(path, mode)
                now = _listing(path)
            except OSError as exc:
                return "%s: %s" % (path, exc)
            for name in now:
                if name not in before:
                    full = os.path.join(path, name)
                    if not _remove(full):
                        return "could not remove %s" % full
            for name, inode in before.items():
                if now.get(name) != inode:
                    return "%s was removed or replaced" % os.path.join(path, name)
            try:
                self.listings[path] = (_stamp(path), before)
            except OSError as exc:
                return "%s: %s" % (path, exc)
        if self.ipc_count is not None:
            if self.ipc_count() != _NO_IPC:
                return "System V ipc objects were left behind"
        elif _sysv_objects() != self.ipc:
            return "System V ipc objects were left behind"
        return None


def _stamp(path: str) -> Any:
    """What changes whenever an entry of the directory is added, removed or
    renamed (its change time, to the nanosecond), and which directory it is."""
    st = os.lstat(path)
    return (st.st_ino, st.st_dev, st.st_ctime_ns, st.st_mtime_ns)


def _not_dedicated(ignore: tuple[int, ...] = ()) -> str | None:
    """Why this guest may be shared (then sweeping it could remove what
    others make): run as root, or with another process of the same uid in
    sight (a process-mode backend, a developer's machine). A namespaced
    clone shows its pid 1 (root) and the grader, whose ``/proc`` entry is
    root's too once it is not dumpable. ``ignore``: the grader's own clean
    twin (see ``remote._take_twin``), which becomes the pack's spawner."""
    uid = os.getuid()
    if uid == 0:
        return "the grader runs as root"
    me = os.getpid()
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != me and int(name) not in ignore:
            try:
                if os.stat("/proc/" + name).st_uid == uid:
                    return "process %s of uid %d shares this guest" % (name, uid)
            except OSError:
                pass
    return None


def _kill_strays() -> str | None:
    """SIGKILL every other process of this uid, until none is left alive;
    None once done, else why not. For a pack whose spawner is gone: what
    its candidates left was below it, in its Landlock domain, and no new
    spawner can reach it. Only ever in a guest a pack runs in, which is
    this grader's alone (see ``_not_dedicated``): there every other process
    of its uid is the old spawner's. (Candidates are undumpable, so their
    ``/proc`` entries are root's: the uid is read from their status.)"""
    import time

    if os.getuid() == 0:  # (never: a pack does not run as root, and root's are everyone's)
        return "the grader runs as root"
    me = os.getpid()
    deadline = time.monotonic() + 2.0
    while True:
        alive = [pid for pid in _own_uid_pids() if pid != me]
        if not alive:
            return None
        if time.monotonic() > deadline:
            return "processes kept coming back"
        for pid in alive:
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        time.sleep(0.001)


def _own_uid_pids() -> list[int]:
    """The live processes (not zombies) whose real uid is this process's."""
    uid = str(os.getuid())
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/status" % name) as fh:
                fields = dict(line.split(":", 1) for line in fh.read().splitlines() if ":" in line)
        except OSError:
            continue
        state = fields.get("State", "").split()
        if fields.get("Uid", "").split()[:1] == [uid] and state[:1] not in (["Z"], ["X"]):
            found.append(int(name))
    return found


_IPC_INFO_CALLS = (("shmctl", 14, 0), ("msgctl", 12, 0), ("semctl", 19, 7))  # *_INFO, int at


def _sysv_counter() -> Callable[[], tuple[int, ...] | None] | None:
    """A function telling how many System V shared memory segments, message
    queues and semaphore sets exist (``SHM_INFO`` / ``MSG_INFO`` /
    ``SEM_INFO``): three system calls, where listing them reads three
    ``/proc`` files at ten times the cost, between every two candidates.
    None where they cannot be asked."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        info = ctypes.create_string_buffer(256)
        calls = [(getattr(libc, name), command, 4 * at) for name, command, at in _IPC_INFO_CALLS]
    except Exception:  # no ctypes, no libc with these calls
        return None

    def count() -> tuple[int, ...] | None:
        counts = []
        for call, command, at in calls:
            ok = call(0, 0, command, info) if at else call(0, command, info)
            if ok < 0:
                return None
            counts.append(int.from_bytes(info.raw[at : at + 4], sys.byteorder))
        return tuple(counts)

    return count


def _listing(path: str) -> dict[str, int]:
    with os.scandir(path) as entries:
        return {entry.name: entry.inode() for entry in entries}


def _remove(path: str) -> bool:
    """Remove ``path`` (a whole tree for a directory, never following a
    link); False when something stays."""
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            try:
                os.chmod(path, 0o700)  # the code may have locked its own directory
            except OSError:
                pass
            with os.scandir(path) as entries:
                names = [entry.name for entry in entries]
            for name in names:
                if not _remove(os.path.join(path, name)):
                    return False
            os.rmdir(path)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError:
        return False
    return True


def _sysv_objects() -> list[str]:
    """The ids of every System V ipc object this guest can see."""
    ids: list[str] = []
    for path in _SYSV:
        try:
            with open(path) as fh:
                ids.extend(
                    path[-3:] + line.split()[1] for line in fh.readlines()[1:] if line.split()
                )
        except OSError:
            pass
    return ids
