"""Where a request's paths are, in the sandbox, and writing and reading
files there: the one set of rules for the guest programs that take a
request's ``files`` and ``fetch_files`` (the language runner, the
SandboxFusion runner; the server checks the same rules first, see
``local_backend/sandbox_fusion.py``: ``path_problem``).

A relative name is inside the run's directory; an absolute one is that
path as the program sees it, only where ``/`` is the sandbox's own (a
namespaced clone's private root, ``own_root``), never under /proc, /sys
or /dev (but /dev/shm). No symlink on a path is followed, and only regular
files are written or read. Each program carries this module joined into
it (it imports it relatively).
"""

# Sent as source to a bare interpreter, maybe Python 3.8: standard library
# only, no contextlib, and %-formatting is as good as any.
# ruff: noqa: UP031, SIM105
from __future__ import annotations

import contextlib
import os


class _PathRefused(Exception):
    """A request's path this run will not write or read (the message says why)."""


#: Trees of the kernel, never a request's files: writing there could reach
#: devices or this process's own state, reading could return it.
_KERNEL_TREES = ("/proc", "/sys", "/dev")
#: ... except the clone's own shared-memory tmpfs.
_OWN_DEV = "/dev/shm/"
_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_REG = 0o100000
_FMT = 0o170000


def own_root() -> bool:
    """Whether ``/`` is this run's own: a namespaced clone's private root
    belongs to the clone's unprivileged uid, which this process runs as.
    Anywhere else (process isolation: ``/`` is the host's) an absolute path
    would be the host's own file, and is refused."""
    uid = os.getuid()
    try:
        return uid != 0 and os.stat("/").st_uid == uid
    except OSError:
        return False


#: Top-level directories of SandboxFusion's image that a private root lacks
#: (its view brings the host's system trees only): programs written for it
#: write there without making them (its own tests write ``/mnt/b``).
IMAGE_DIRS = ("/mnt",)


def make_image_dirs() -> None:
    """:data:`IMAGE_DIRS`, empty and this run's own, where ``/`` is its own
    (a fresh private root per request); nothing anywhere else."""
    if not own_root():
        return
    for path in IMAGE_DIRS:
        with contextlib.suppress(OSError):
            os.mkdir(path, 0o755)


def _place(root: str, name: str) -> tuple[str, list[str]]:
    """Where a request's ``name`` is: the directory to start from and the
    components below it (normalized: ``..`` taken away lexically, which is
    what the kernel does too, as no symlink is ever followed). A relative
    name is inside ``root`` (the run's working directory); an absolute one
    is that path as the program sees it, only where ``/`` is the run's own
    (``own_root``), and never under /proc, /sys or /dev (but /dev/shm)."""
    if not name or "\0" in name:
        raise _PathRefused("%r: not a path" % (name,))
    if name.startswith("/"):
        norm = "/" + os.path.normpath(name).lstrip("/")
        if norm == "/":
            raise _PathRefused("%r: not a file" % (name,))
        for tree in _KERNEL_TREES:
            if (norm == tree or norm.startswith(tree + "/")) and not norm.startswith(_OWN_DEV):
                raise _PathRefused("%r: %s is the kernel's, not the sandbox's" % (name, tree))
        if not own_root():
            raise _PathRefused(
                "%r: an absolute path needs a root of the sandbox's own (namespaces "
                "isolation); here / is the host's" % (name,)
            )
        return "/", norm[1:].split("/")
    norm = os.path.normpath(name)
    if norm in (".", "..") or norm.startswith("../"):
        raise _PathRefused("%r: a relative path must stay inside the run's directory" % (name,))
    return root, norm.split("/")


def _open_dir(start: str, parts: list[str], make: bool) -> int:
    """An ``O_PATH`` handle on ``start/parts...``, made (0755) where missing
    when ``make``; a symlink on the way is refused (``ENOTDIR``), never
    followed, so a path cannot be led out of where it was checked to be."""
    fd = os.open(start, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts:
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not make:
                    raise
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_file(root: str, name: str, data: bytes, mode: int | None = None) -> None:
    """``data`` at the request's ``name`` (see ``_place``), its missing
    directories made; never through a symlink, and only as a regular file,
    given ``mode`` when one is given (else made 0644 less the umask).
    Raises ``_PathRefused`` saying why not."""
    start, parts = _place(root, name)
    try:
        dfd = _open_dir(start, parts[:-1], True)
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK
            made = 0o644 if mode is None else mode
            fd = os.open(parts[-1], flags | os.O_CLOEXEC, made, dir_fd=dfd)
        finally:
            os.close(dfd)
        try:
            if os.fstat(fd).st_mode & _FMT != _REG:
                raise _PathRefused("%r: not a regular file" % (name,))
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if mode is not None:
                os.fchmod(fd, mode)
        finally:
            os.close(fd)
    except OSError as exc:
        raise _PathRefused("cannot write %r: %s" % (name, exc.strerror or exc)) from None


def fetch_file(root: str, name: str, cap: int) -> bytes | None:
    """At most ``cap`` bytes of the regular file at the request's ``name``
    (see ``_place``), or None: missing, not a regular file, a symlink on the
    way, or refused (a path SandboxFusion cannot find is left out too)."""
    try:
        start, parts = _place(root, name)
        dfd = _open_dir(start, parts[:-1], False)
        try:
            if os.stat(parts[-1], dir_fd=dfd, follow_symlinks=False).st_mode & _FMT != _REG:
                return None
            fd = os.open(
                parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd
            )
        finally:
            os.close(dfd)
    except (OSError, _PathRefused):
        return None
    try:
        if os.fstat(fd).st_mode & _FMT != _REG:
            return None
        chunks = []
        left = cap
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def request_root(prefix: str, files: dict[str, str]) -> str:
    """A fresh directory for one request's run (``<prefix>-<pid>`` in the
    working directory), the image's directories made, the request's
    ``files`` (base64) written there: :class:`_PathRefused` for a name the
    rules above refuse."""
    import base64

    root = os.path.join(os.getcwd(), "%s-%d" % (prefix, os.getpid()))
    os.mkdir(root, 0o700)
    make_image_dirs()
    for name, content in files.items():
        write_file(root, name, base64.b64decode(content))
    return root


def fetched_files(root: str, names: list[str], cap: int) -> dict[str, str]:
    """The request's ``fetch_files`` that exist, each read up to ``cap``
    bytes, base64; the missing ones left out (as SandboxFusion does)."""
    import base64

    files = {}
    for name in names:
        data = fetch_file(root, name, cap)
        if data is not None:
            files[name] = base64.b64encode(data).decode()
    return files
