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

import contextlib
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Final

from .procs import stop_process

__all__ = ["collimate_serve", "expected_output", "python_blocks", "run_snippet"]

_BLOCK: Final = re.compile(r"^```python[^\n]*\n(?P<body>.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
_PRINT_COMMENT: Final = re.compile(r"^\s*print\(.*\)\s*#\s*(?P<want>.+?)\s*$")
_LISTENING: Final = re.compile(r"listening on (?P<url>http://127\.0\.0\.1:\d+)")


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


@contextlib.contextmanager
def collimate_serve(
    args: Sequence[str] = (), *, python: str | Path | None = None, timeout: float = 120.0
) -> Iterator[str]:
    """``collimate serve --port 0`` as a reader starts it (the console script
    beside ``python``, this interpreter by default, as a process of its own);
    yields the URL it prints once it listens, and stops it (SIGTERM) after.
    The port is the server's own pick, so parallel runs never race for one."""
    script = Path(python or sys.executable).with_name("collimate")
    if not script.exists():
        raise FileNotFoundError(f"no collimate console script beside {python or sys.executable}")
    server = subprocess.Popen(
        [str(script), "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = _wait_for_url(server, timeout)
        yield url
    finally:
        stop_process(server)  # type: ignore[arg-type]


def _wait_for_url(server: subprocess.Popen[str], timeout: float) -> str:
    """The URL of the banner's ``listening on`` line; the rest of the output
    is drained in the background so the server never blocks on its pipe."""
    found: list[str] = []
    seen: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert server.stdout is not None
        for line in server.stdout:
            if not ready.is_set():
                seen.append(line)
                match = _LISTENING.search(line)
                if match:
                    found.append(match.group("url"))
                    ready.set()
        ready.set()

    threading.Thread(target=read, daemon=True, name="collimate-serve-output").start()
    if not ready.wait(timeout) or not found:
        raise RuntimeError(
            f"collimate serve printed no 'listening on' line within {timeout:.0f} s "
            f"(exit {server.poll()}):\n{''.join(seen)[-2000:]}"
        )
    return found[0]
