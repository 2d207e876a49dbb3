"""A warm Go build cache that each Go compile starts from.

A Go compile in a clone has a build cache of its own (a shared writable
one would let a program poison its siblings' builds), so each compile
rebuilt every package it imports: 4.8 s for a test program importing
``testing`` and ``fmt`` (0.7 s warm), 20 to 40 s for one importing
testify (HumanEval-X's Go tests), which pulls in ``net/http``; with
``CGO_ENABLED=0`` none of Debian's precompiled standard library applies.

So the packages programs and tests import are compiled once, on the host,
into a cache directory under :func:`~.precompiled.pch_root` (which the
language template's clones see read-only); a compile copies it into its
own cache first (``COLLIMATE_GO_SEED`` in the toolchain's environment:
``language_runner`` copies it, about 30 MB, tens of milliseconds), and
builds only the candidate's package. It is built whole in a temporary directory, then
renamed into place: servers building it at once cannot leave a torn one.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from .host_tools import run_tool
from .precompiled import pch_root

log = logging.getLogger("collimate_rl.local_backend")

#: Where Debian puts Go libraries (testify among them).
GO_LIBRARIES: Final = "/usr/share/gocode"
#: The standard packages contest programs and the datasets' tests import.
SEED_PACKAGES: Final = (
    "bufio", "bytes", "container/heap", "container/list", "crypto/md5", "encoding/json",
    "errors", "fmt", "math", "math/big", "math/bits", "math/rand", "os", "reflect", "regexp",
    "sort", "strconv", "strings", "sync", "time", "unicode", "unicode/utf8",
)  # fmt: skip
#: testify's assert, when the host has it (HumanEval-X's Go tests).
TESTIFY: Final = "github.com/stretchr/testify/assert"
#: Seconds building the seed may take.
BUILD_TIMEOUT_S: Final = 600
#: A finished seed has this file.
_READY: Final = "READY"


def _testify() -> bool:
    return os.path.isdir(os.path.join(GO_LIBRARIES, "src", TESTIFY))


def seed_dir(go: str) -> Path:
    """The seed for ``go``: named after the go binary (its path and stat)
    and what it holds, so a new Go gets a new seed."""
    real = os.path.realpath(go)
    try:
        st = os.stat(real)
        stamp: list[object] = [real, st.st_size, st.st_mtime_ns]
    except OSError:
        stamp = [real]
    key = hashlib.sha256(repr([stamp, SEED_PACKAGES, _testify()]).encode()).hexdigest()[:16]
    return pch_root() / f"go-{key}"


def _seed_program() -> str:
    imports = [*SEED_PACKAGES, *([TESTIFY] if _testify() else [])]
    lines = "\n".join(f'\t_ "{p}"' for p in imports)
    return (
        f'package seed_test\n\nimport (\n\t"testing"\n{lines}\n)\n\n'
        "func TestSeed(t *testing.T) {}\n"
    )


def ensure_go_seed(go: str, env: Mapping[str, str]) -> bool:
    """Build the seed for ``go`` with the clones' environment ``env`` (the
    toolchain's) unless it is there; blocking: call it from a thread. True
    when it is there afterwards."""
    target = seed_dir(go)
    if (target / _READY).is_file():
        return True
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        (work / "seed_test.go").write_text(_seed_program(), encoding="utf-8")
        paths = {"dir": str(work), "build": str(work), "src": str(work / "seed_test.go")}
        environ = {k: v.format(**paths) for k, v in env.items()}
        environ.update(HOME=str(work), TMPDIR=str(work), GOCACHE=str(work / "cache"))
        if os.path.isdir(GO_LIBRARIES):
            environ["GOPATH"] = f"{work / '.gopath'}:{GO_LIBRARIES}"
        done = run_tool(
            [go, "test", "-c", "-o", str(work / "seed"), str(work / "seed_test.go")],
            timeout=BUILD_TIMEOUT_S,
            env=environ,
            cwd=work,
        )
        if done.returncode != 0:
            log.warning("no warm Go cache: %s", (done.stdout + done.stderr).strip()[-500:])
            return False
        for path in (work / "seed", work / "seed_test.go"):
            path.unlink(missing_ok=True)
        shutil.rmtree(work / ".gopath", ignore_errors=True)
        (work / _READY).write_text("", encoding="utf-8")
        for root, dirs, files in os.walk(work):
            for name in dirs:
                os.chmod(os.path.join(root, name), 0o755)
            for name in files:
                os.chmod(os.path.join(root, name), 0o644)
        os.chmod(work, 0o755)
        try:
            os.replace(work, target)
        except OSError:  # another server put one there first
            return (target / _READY).is_file()
        return True
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("no warm Go cache: %s", exc)
        return False
    finally:
        shutil.rmtree(work, ignore_errors=True)
