"""A precompiled ``bits/stdc++.h`` for C++ compiles.

Nearly every competitive-programming solution starts with
``#include <bits/stdc++.h>``: parsing it is most of a compile (about 1.1 s
of CPU here, against 0.2 s with a precompiled header). g++ uses
``bits/stdc++.h.gch`` from an ``-I`` directory in place of the header when
it was built with the same options; when it was not (or is missing), it
reads the header as usual, so a stale or absent file only costs time.

The header is built once per compiler and flags, on the host (its input
is the system's own header, never a candidate's), into the server's cache
directory (:func:`pch_root`), which the language template's clones see
read-only. It is written whole, then renamed into place: servers building
it at once cannot leave a torn file.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Final

log = logging.getLogger("collimate_rl.local_backend")

#: The header, as contest solutions include it.
HEADER: Final = "bits/stdc++.h"
#: Options the header is built with (those of ``toolchains._cpp`` that
#: change what a header means; ``-pipe`` and ``-s`` do not).
PCH_FLAGS: Final = ("-std=c++17", "-O2", "-DONLINE_JUDGE")
#: CPU seconds building it may take.
BUILD_TIMEOUT_S: Final = 300


def pch_root() -> Path:
    """Where precompiled headers are kept (one directory per compiler)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "collimate-rl" / "pch"


def pch_dir(gxx: str) -> Path:
    """The ``-I`` directory for ``gxx``: named after the compiler file (its
    path and stat) and the flags, so a new compiler gets a new header."""
    real = os.path.realpath(gxx)
    try:
        st = os.stat(real)
        stamp = [real, st.st_size, st.st_mtime_ns]
    except OSError:
        stamp = [real]
    key = hashlib.sha256(repr([stamp, PCH_FLAGS]).encode()).hexdigest()[:16]
    return pch_root() / key


def _header_path(gxx: str) -> str | None:
    """The system's ``bits/stdc++.h``, as g++ finds it."""
    try:
        out = subprocess.run(
            [gxx, "-std=c++17", "-x", "c++", "-H", "-fsyntax-only", "-"],
            input="#include <bits/stdc++.h>\n",
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.stderr.splitlines():
        if line.startswith(". ") and line.endswith(HEADER):
            return line[2:].strip()
    return None


def ensure_pch(gxx: str, flags: Sequence[str] = PCH_FLAGS) -> bool:
    """Build the precompiled header for ``gxx`` unless it is there (blocking:
    call it from a thread). True when it is there afterwards."""
    target = pch_dir(gxx) / f"{HEADER}.gch"
    if target.is_file():
        return True
    header = _header_path(gxx)
    if header is None:
        log.warning("no precompiled %s: g++ does not find the header", HEADER)
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        done = subprocess.run(
            [gxx, *flags, "-x", "c++-header", header, "-o", str(tmp)],
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
        )
        if done.returncode != 0:
            log.warning("no precompiled %s: %s", HEADER, done.stderr.strip()[-500:])
            return False
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
        return True
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("no precompiled %s: %s", HEADER, exc)
        return False
    finally:
        tmp.unlink(missing_ok=True)
