"""Running a README's snippets as a reader would.

A README's example is a promise: copied into a file and run against a
grader, it prints what its comment says. These helpers let a test keep that
promise honest without a second copy of the snippet: take the fenced Python
blocks from the README itself, run one in a fresh interpreter with the
environment a user would have set (``COLLIMATE_SERVE_URL`` after
``collimate serve``), and compare what it printed with the ``# ...``
comment on its last ``print`` line.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Final

__all__ = ["expected_output", "python_blocks", "run_snippet"]

_BLOCK: Final = re.compile(r"^```python[^\n]*\n(?P<body>.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
_PRINT_COMMENT: Final = re.compile(r"^\s*print\(.*\)\s*#\s*(?P<want>.+?)\s*$")


def python_blocks(readme: str | Path, containing: str = "") -> list[str]:
    """The README's fenced ```python blocks, in order; only those whose text
    contains ``containing`` when it is given."""
    text = Path(readme).read_text(encoding="utf-8")
    return [m.group("body") for m in _BLOCK.finditer(text) if containing in m.group("body")]


def expected_output(block: str) -> list[str]:
    """What the block says it prints: the ``# ...`` comment of each
    ``print(...)  # ...`` line, in order. A block promising nothing is an
    error: a README example should show its result."""
    wants = [m.group("want") for m in map(_PRINT_COMMENT.match, block.splitlines()) if m]
    if not wants:
        raise ValueError("the snippet has no `print(...)  # expected` line")
    return wants


def run_snippet(
    block: str,
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout: float = 300.0,
) -> list[str]:
    """Run ``block`` as a script in a fresh interpreter (this one's
    executable, so the test's environment's packages) and return its stdout
    lines; a non-zero exit raises with the snippet's stderr."""
    full_env = {**os.environ, **(env or {})}
    done = subprocess.run(
        [sys.executable, "-c", block],
        env=full_env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(
            f"the snippet exited {done.returncode}:\n{done.stderr[-4000:]}\n--- stdout:\n"
            f"{done.stdout[-2000:]}"
        )
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]
