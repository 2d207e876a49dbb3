"""Execution engines of the local backend (see :mod:`.api`).

``make_engine(isolation)`` is the one entry point the server uses.
"""

from __future__ import annotations

from typing import Literal

from .api import Clone, Engine, ExecJob, ExecOutcome, Limits, TemplateSpec
from .subprocess_engine import SubprocessEngine

__all__ = [
    "Clone",
    "Engine",
    "ExecJob",
    "ExecOutcome",
    "Limits",
    "TemplateSpec",
    "make_engine",
]


def make_engine(isolation: Literal["auto", "namespaces", "process"] = "auto") -> Engine:
    """Build the engine for an isolation setting (probed at ``start()``)."""
    if isolation not in ("auto", "namespaces", "process"):
        raise ValueError(f"unknown isolation {isolation!r}")
    return SubprocessEngine()
