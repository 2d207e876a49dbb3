"""What of the host a namespaced clone's code may see: its *view*.

A clone's root holds nothing of the host but what code needs to run, all
read-only: the system directories (``SYSTEM_DIRS``: programs, libraries,
``/etc``), a minimal ``/dev``, the interpreter's own trees (its prefix, the
venv, ``sys.path`` entries, an editable install's source dirs) and the paths
a template names (``expose``). Not the home directories, the project
checkout, ``/var``, ``/srv``, ``/opt``, ``/run``, ``/mnt`` or the host's
``/tmp``; not the server's config file (nor its directory, unless that is a
system directory itself) nor its socket, even when they sit under an
exposed tree: those are masked (``hidden``).

Every tree is exposed at its own path, not its parents: an interpreter under
``/root/.pyenv/versions/3.11.7`` shows that directory and none of ``/root``'s
other entries. The view is computed once per template, here, on the server;
the clone builds it once (``guest.private_root``) and binds it into every
generation.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

#: Top-level host directories every clone sees (read-only) when they exist.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
#: Files of /etc that hold secrets: masked even when readable (they rarely are).
ETC_SECRETS = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers")
#: Never exposed, even when named: the whole host, or its kernel interfaces.
REFUSED = ("/", "/proc", "/sys", "/dev")


class ExposeError(ValueError):
    """A path a template names cannot be exposed (the message says which and why)."""


def under(path: str, tree: str) -> bool:
    return path == tree or path.startswith(tree.rstrip("/") + "/")


def check_exposable(path: str) -> str:
    """``path`` (a template's ``expose`` entry) normalised, or :class:`ExposeError`."""
    if not isinstance(path, str) or not os.path.isabs(path):
        raise ExposeError(f"expected an absolute host path, got {path!r}")
    norm = os.path.normpath(path)
    if norm in (*REFUSED, "/tmp") or any(under(norm, r) for r in REFUSED[1:]):
        raise ExposeError(f"{path!r} cannot be exposed (the clone has its own {norm})")
    return norm


def host_view(
    interpreter_trees: Iterable[str],
    expose: Iterable[str] = (),
    hidden: Iterable[str] = (),
) -> dict[str, list[str]]:
    """The view of one template: ``links`` (top-level symlinks, ``name=target``),
    ``binds`` (host paths bound read-only at the same path, no two nested),
    ``hide`` (paths under a bind that are masked) and ``missing`` (named but
    absent on this host: not exposed)."""
    links: list[str] = []
    trees: set[str] = set()
    for top in SYSTEM_DIRS:
        if os.path.islink(top):
            links.append(f"{top[1:]}={os.readlink(top)}")
        elif os.path.isdir(top):
            trees.add(top)
    missing: list[str] = []
    wanted: set[str] = set()
    for path in interpreter_trees:
        if not path or not os.path.isabs(path):
            continue
        # both as named and its real path: sys.path may name a symlink
        # (a venv's lib64, ``pytest-current``) as well as what it points to
        wanted.update({os.path.abspath(path), os.path.realpath(path)})
    for path in expose:
        norm = check_exposable(path)
        if not os.path.exists(norm):
            missing.append(norm)
            continue
        wanted.update({norm, os.path.realpath(norm)})
    for path in wanted:
        if not os.path.exists(path) or path in REFUSED:
            continue
        if os.path.islink(path):
            # the link's own directory shows it; its target is in ``wanted`` too
            path = os.path.dirname(path)
            if path == "/":
                continue
        trees.add(path)
    binds: list[str] = []
    for tree in sorted(trees):
        if any(under(tree, b) for b in binds):
            continue
        if any(under(tree, link_path) for link_path in ("/" + lk.split("=")[0] for lk in links)):
            continue  # under /bin when /bin -> usr/bin: the target's tree shows it
        binds.append(tree)
    hide = sorted(
        {
            os.path.normpath(h)
            for h in list(hidden) + list(ETC_SECRETS)
            if h and os.path.isabs(h) and os.path.lexists(h) and any(under(h, b) for b in binds)
        }
    )
    return {"links": links, "binds": binds, "hide": hide, "missing": sorted(missing)}


def server_private_paths(config_file: str | None, socket_path: str | None) -> list[str]:
    """The server's own files a clone must never see: its config file and,
    when that lives in a directory of its own (not a system directory
    itself, such as ``/etc``), the whole directory (keys sit next to
    configs); its unix socket."""
    out: list[str] = []
    if config_file:
        path = os.path.abspath(config_file)
        out.append(path)
        folder = os.path.dirname(path)
        if folder not in SYSTEM_DIRS and folder != "/":
            out.append(folder)
    if socket_path:
        out.append(os.path.abspath(socket_path))
    return out
