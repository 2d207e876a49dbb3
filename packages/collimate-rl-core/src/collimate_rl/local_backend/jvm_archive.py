"""A class-data-sharing archive for the JVM compilers (scalac, kotlinc).

scalac and kotlinc are JVM programs of tens of megabytes of classes: most
of a small compile is the JVM loading and verifying them (scalac: 2.1 s
of wall time, 2.6 CPU-s here for a ten-line program). The JVM can map
classes it loaded once from an archive instead (CDS, ``-Xshare``): with
one, the same compile takes 1.2 s and 1.7 CPU-s; kotlinc's 2.4 s, 1.4 s.

A compile toolchain asks for one with
``-XX:SharedArchiveFile=<archive>`` in its argv (:func:`archive_flag`).
The archive is made once per compiler, on the host, by compiling a fixed
sample program of ours (never a candidate's) with
``-XX:ArchiveClassesAtExit`` into the server's cache directory
(:func:`~.precompiled.pch_root`), which the language template's clones
see read-only. It is written whole, then renamed into place. The JVM
checks an archive against its own build and the class path before using
it and ignores one that does not fit, as it ignores a missing one: a
stale or absent archive only costs time, never a compile.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from .precompiled import pch_root

log = logging.getLogger("collimate_rl.local_backend")

_USE: Final = "-XX:SharedArchiveFile="
_DUMP: Final = "-XX:ArchiveClassesAtExit="
#: The JVM's notes on an archive it cannot use go to stdout otherwise.
QUIET: Final = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
#: Seconds making an archive may take.
BUILD_TIMEOUT_S: Final = 300


def archive_flag(name: str, stamp: Sequence[str]) -> str:
    """The flag asking for the archive of the compiler ``name`` made of the
    files ``stamp`` (the JVM and the compiler's jars: their paths and
    stats name the archive, so a new compiler or JVM gets a new one)."""
    parts: list[object] = [name]
    for path in stamp:
        real = os.path.realpath(path)
        try:
            st = os.stat(real)
            parts.append([real, st.st_size, st.st_mtime_ns])
        except OSError:
            parts.append([real])
    key = hashlib.sha256(repr(parts).encode()).hexdigest()[:16]
    return f"{_USE}{pch_root() / f'jvm-{name}-{key}.jsa'}"


def archive_of(compile_argv: Sequence[str] | None) -> str | None:
    """The archive a compile command asks for, or None."""
    for arg in compile_argv or ():
        if arg.startswith(_USE):
            return arg[len(_USE) :]
    return None


def ensure_archive(
    compile_argv: Sequence[str], env: Mapping[str, str], sample: Mapping[str, str]
) -> bool:
    """Make the archive ``compile_argv`` asks for unless it is there, by
    compiling ``sample`` (file name -> text; the first is ``{src}``, the
    others are written beside it) on the host (blocking: call it from a
    thread). True when it is there afterwards."""
    target = archive_of(compile_argv)
    if target is None or not sample:
        return False
    path = Path(target)
    if path.is_file():
        return True
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tempfile.TemporaryDirectory(prefix="collimate-cds-") as work:
            names = list(sample)
            for name, text in sample.items():
                Path(work, name).write_text(text, encoding="utf-8")
            os.mkdir(os.path.join(work, "build"))
            paths = {"src": os.path.join(work, names[0]), "build": os.path.join(work, "build"),
                     "dir": work}  # fmt: skip
            argv = [
                f"{_DUMP}{tmp}" if a.startswith(_USE) else a.format(**paths) for a in compile_argv
            ]
            done = subprocess.run(
                argv,
                cwd=work,
                env={**env, "HOME": work, "TMPDIR": work},
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT_S,
            )
        if done.returncode != 0 or not tmp.is_file():
            log.warning("no class archive for %s: %s", path.name, done.stderr.strip()[-500:])
            return False
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
        return True
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("no class archive for %s: %s", path.name, exc)
        return False
    finally:
        tmp.unlink(missing_ok=True)
