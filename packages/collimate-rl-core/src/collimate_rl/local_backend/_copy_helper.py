"""Copy a namespaced clone's writable state into fresh clones (run as a
separate process by :mod:`.fork_copy`; standard library only, so it starts
fast and never imports the server).

Usage: ``python -I _copy_helper.py '{"parent_pid": P, "parent_uid": U,
"children": [[pid, uid], ...]}'``.

The parent's state is read through its mount namespace
(``/proc/<pid>/root``): its private root is a tmpfs of its own (every write
to the root file system lands there, its ``/tmp`` included), with the
read-only view of the host bound in (those mounts are left alone), and
``/dev/shm`` is a tmpfs of its own. Sources are opened once, then, per
child, a forked copy chroots into the child's private root and writes
there: a symlink the parent's code planted can never point a write outside
the child. Files the parent's uid owned become the child's uid's.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import sys

GEN = "/tmp/gen"  # the clone's generation layer (see guest.private_root)
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _owner(st: os.stat_result, puid: int | None, cuid: int | None) -> tuple[int, int]:
    if puid is None or cuid is None:
        return st.st_uid, st.st_gid
    return (cuid if st.st_uid == puid else st.st_uid), (cuid if st.st_gid == puid else st.st_gid)


def _remove(path: str) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _copy_entry(name: str, dirfd: int, dest: str, puid: int | None, cuid: int | None) -> bool:
    """Copy one entry; True when it is a directory to descend into."""
    st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    uid, gid = _owner(st, puid, cuid)
    mode = stat.S_IMODE(st.st_mode) & 0o1777  # never a set-id bit (nosuid anyway)
    if stat.S_ISDIR(st.st_mode):
        if (os.path.lexists(dest) and not os.path.isdir(dest)) or os.path.islink(dest):
            _remove(dest)
        os.makedirs(dest, exist_ok=True)
        os.chmod(dest, mode)
        os.chown(dest, uid, gid)
        return True
    if stat.S_ISLNK(st.st_mode):
        target = os.readlink(name, dir_fd=dirfd)
        _remove(dest)
        os.symlink(target, dest)
        os.chown(dest, uid, gid, follow_symlinks=False)
        return False
    if stat.S_ISREG(st.st_mode):
        if os.path.lexists(dest) and (os.path.islink(dest) or os.path.isdir(dest)):
            _remove(dest)
        src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dirfd)
        try:
            out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            try:
                while True:
                    chunk = os.read(src, 1 << 20)
                    if not chunk:
                        break
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(out, view) :]
                os.fchmod(out, mode)
                os.fchown(out, uid, gid)
            finally:
                os.close(out)
        finally:
            os.close(src)
    return False  # fifos, sockets, devices: not state worth copying


def copy_tree(src_fd: int, dest_root: str, puid: int | None, cuid: int | None) -> None:
    """Copy the tree under ``src_fd`` to ``dest_root`` (in the child's root),
    leaving the mounts inside it alone (the view, ``/proc``, ``/dev/shm``:
    the child has its own)."""
    top_dev = os.fstat(src_fd).st_dev
    for dirpath, dirnames, filenames, dirfd in os.fwalk(".", dir_fd=src_fd, follow_symlinks=False):
        norm = os.path.normpath(dirpath)
        rel = "" if norm == "." else norm
        dest_dir = os.path.join(dest_root, rel) if rel else dest_root
        keep = []
        for name in dirnames:
            st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
            if st.st_dev != top_dev:  # a mount inside the tree
                continue
            if _copy_entry(name, dirfd, os.path.join(dest_dir, name), puid, cuid):
                keep.append(name)
        dirnames[:] = keep
        for name in filenames:
            _copy_entry(name, dirfd, os.path.join(dest_dir, name), puid, cuid)


def main(argv: list[str]) -> int:
    spec = json.loads(argv[1])
    base = f"/proc/{int(spec['parent_pid'])}/root{GEN}"
    puid = spec.get("parent_uid")
    sources: list[tuple[int, str]] = [(os.open(base + "/root", _DIR), "/")]
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        sources.append((os.open(base + "/root/dev/shm", _DIR), "/dev/shm"))
    failed = 0
    for child_pid, child_uid in spec["children"]:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.chroot(f"/proc/{int(child_pid)}/root{GEN}/root")
                os.chdir("/")
                for fd, dest in sources:
                    copy_tree(fd, dest, puid, child_uid)
                code = 0
            except BaseException as exc:
                sys.stderr.write(f"copy into clone {child_pid} failed: {exc!r}\n")
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
