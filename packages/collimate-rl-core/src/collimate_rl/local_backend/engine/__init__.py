"""Execution engines of the local backend (see :mod:`.api`).

``make_engine(isolation)`` is the one entry point the server uses.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from .api import Clone, Engine, ExecJob, ExecOutcome, Limits, TemplateSpec
from .fork_clone import CloneDied
from .fork_engine import ForkEngine

__all__ = [
    "Clone",
    "CloneDied",
    "Engine",
    "ExecJob",
    "ExecOutcome",
    "ForkEngine",
    "Limits",
    "TemplateSpec",
    "make_engine",
]


def make_engine(
    isolation: Literal["auto", "namespaces", "process"] = "auto",
    *,
    pool_size: int = 2,
    hidden: Sequence[str] = (),
) -> ForkEngine:
    """Build the engine for an isolation setting; the level in force is decided
    (and ``isolation_detail`` written) by ``start()``, which probes namespaces
    by really making one. ``pool_size``: ready clones kept per template;
    ``hidden``: host paths no clone may see (the server's config, socket)."""
    return ForkEngine(isolation, pool_size=pool_size, hidden=hidden)
