"""Whether a command draws with Rich or prints plain lines.

One rule for every command that has a live view (``bake``, ``status``, the
views of :mod:`collimate_rl.views`): Rich only when it is installed, the
stream is a terminal, ``NO_COLOR`` is unset and ``--plain`` was not given.
Plain output carries no escape sequence, so a log or a pipe stays readable.
"""

from __future__ import annotations

import os
from typing import TextIO

__all__ = ["rich_available", "wants_rich"]


def rich_available() -> bool:
    """Rich can be imported (the ``progress`` / ``demo`` extra)."""
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return True


def wants_rich(out: TextIO, *, plain: bool = False) -> bool:
    """Whether a view on ``out`` draws with Rich (see the module docstring)."""
    if plain or os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(out, "isatty", None)
    if not callable(isatty) or not isatty():
        return False
    return rich_available()
