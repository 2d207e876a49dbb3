"""The one percentile rule of core's figures: nearest rank.

Shared by the server's ``/v1/stats`` and the CLI's views, so a p99 a view
shows and the one the server reports are computed the same way.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["nearest_rank"]


def nearest_rank(ordered: Sequence[float], pct: float) -> float:
    """The nearest-rank ``pct`` percentile of an ascending sequence (0.0 for
    none): a value that was really observed, never an interpolation."""
    if not ordered:
        return 0.0
    n = len(ordered)
    rank = -int(-pct * n // 100)  # the ceiling of pct% of n
    return ordered[min(max(rank, 1), n) - 1]
