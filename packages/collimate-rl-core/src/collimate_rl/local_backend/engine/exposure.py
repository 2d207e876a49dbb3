"""Which host directories a namespaced clone must be shown despite permissions.

Clones run as an unprivileged uid, so an interpreter installed under a
private directory (pyenv or a hatch venv under ``/root``, mode 700) would be
unusable inside them: every stdlib module not imported ahead of time would
fail to load. Instead of loosening host permissions, a clone mounts an empty
read-only tmpfs over the private directory and binds back only the
interpreter's own trees (read-only, like the rest of the host): the code sees
its interpreter, and still nothing else of ``/root``.
"""

from __future__ import annotations

import os
import stat


def first_private_ancestor(path: str) -> str | None:
    """The first directory on ``path`` that others may not traverse, if any."""
    current = "/"
    for part in [p for p in os.path.realpath(path).split("/") if p]:
        try:
            mode = os.stat(current).st_mode
        except OSError:
            return None
        if not mode & stat.S_IXOTH:
            return current
        current = os.path.join(current, part)
    return None


def exposures(paths: list[str]) -> list[list[object]]:
    """``[[private_dir, [subtree, ...]], ...]``: what each clone re-exposes.

    Nested subtrees are folded into their parent."""
    wanted: dict[str, set[str]] = {}
    # both the path as given and its real path: sys.path may name a symlink
    # (``pytest-current``) that the clone's view would otherwise lack
    candidates = {os.path.abspath(p) for p in paths} | {os.path.realpath(p) for p in paths}
    for path in sorted(candidates):
        real = path
        if not os.path.isdir(real):
            real = os.path.dirname(real)
        if not os.path.isdir(real):
            continue
        if real.startswith("/tmp/"):
            # every clone has its own /tmp: trees there are always re-exposed
            wanted.setdefault("/tmp", set()).add(real)
            continue
        private = first_private_ancestor(real)
        if private is not None and private != "/":
            wanted.setdefault(private, set()).add(real)
    out: list[list[object]] = []
    for private, subtrees in sorted(wanted.items()):
        kept: list[str] = []
        for tree in sorted(subtrees):
            if not any(tree == k or tree.startswith(k + "/") for k in kept):
                kept.append(tree)
        out.append([private, kept])
    return out
