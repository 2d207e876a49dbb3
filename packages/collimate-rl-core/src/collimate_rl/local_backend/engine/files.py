"""Writing an exec's ``files`` into a clone, refusing any path that escapes it.

Relative paths land in the clone's working directory. Absolute paths land in
the clone's private root when it has one (namespaces mode: a copy-on-write
root only that clone sees); a clone without a private root (process mode)
refuses them rather than writing over the host.
"""

from __future__ import annotations

import os
from collections.abc import Iterable


def resolve_file_path(path: str, workdir: str, private_root: str | None) -> str | None:
    """Where ``path`` lands, or None when it would leave the clone's area."""
    if not path or "\x00" in path:
        return None
    if os.path.isabs(path):
        if private_root is None:
            return None
        base = private_root
        rel = os.path.normpath(path).lstrip("/")
    else:
        base = workdir
        rel = os.path.normpath(path)
    if rel in ("", ".") or rel == ".." or rel.startswith("../"):
        return None
    return os.path.join(base, rel)


def write_job_files(
    files: Iterable[tuple[str, str]], workdir: str, private_root: str | None
) -> str | None:
    """Write every file (text, UTF-8); return an error message or None."""
    for path, content in files:
        target = resolve_file_path(path, workdir, private_root)
        if target is None:
            where = "the working directory" if private_root is None else "the clone"
            return f"collimate: refusing to write {path!r}: outside {where}\n"
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w", encoding="utf-8") as fh:
                fh.write(content)
        except OSError as exc:
            return f"collimate: cannot write {path!r}: {exc.strerror or exc}\n"
    return None
