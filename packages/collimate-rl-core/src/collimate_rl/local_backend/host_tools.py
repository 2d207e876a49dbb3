"""Host tools (compilers, ``npm``) run by the server itself, outside any
clone: the toolchain probes (:mod:`.toolchains`) and the warm Go cache's
build (:mod:`.go_cache`)."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from typing import Any


def run_tool(
    argv: Sequence[str], *, timeout: float, **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    """``argv`` run to its end with nothing on its stdin, its output
    captured as text (``kwargs``, such as ``env`` and ``cwd``, go to
    :func:`subprocess.run`, which raises as it does)."""
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, **kwargs
    )
