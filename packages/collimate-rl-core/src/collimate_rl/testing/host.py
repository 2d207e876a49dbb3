"""What this host can do, probed without the code under test.

A namespace test may skip only because the machine cannot make Linux
namespaces, never because our engine failed to: an engine bug reported as
"namespaces unavailable" would turn a regression into a quiet skip. So the
reason to skip is decided by an independent probe (util-linux ``unshare``),
and an engine that fails on a host that has namespaces fails the test.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from typing import NoReturn

__all__ = ["namespaces_missing_reason", "skip_unless_host_lacks_namespaces"]


@functools.lru_cache(maxsize=1)
def namespaces_missing_reason() -> str | None:
    """Why this host cannot make the namespaces the engine uses, or ``None``."""
    if not sys.platform.startswith("linux"):
        return f"not Linux ({sys.platform})"
    if os.geteuid() != 0:
        return "not root: the namespaced engine needs root"
    unshare = shutil.which("unshare")
    if unshare is None:
        return "util-linux `unshare` not found to probe namespaces"
    probe = [unshare, "--mount", "--pid", "--net", "--ipc", "--uts", "--fork", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"`unshare` probe failed: {exc}"
    if done.returncode != 0:
        return f"`unshare` probe failed: {done.stderr.decode(errors='replace').strip()}"
    return None


def skip_unless_host_lacks_namespaces(exc: BaseException, mode: str = "namespaces") -> NoReturn:
    """Skip the calling test if the host truly lacks namespaces; otherwise
    re-raise ``exc`` (an engine that cannot start where namespaces work, or
    in process mode, is a failure)."""
    import pytest

    reason = namespaces_missing_reason() if mode != "process" else None
    if reason is None:
        raise exc
    pytest.skip(reason=f"namespaces unavailable here: {reason} (engine said: {exc})")
