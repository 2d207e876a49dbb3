"""The figures views show: latency samples, percentiles, histograms.

Pure functions and a thread-safe sample list, so a view's summary is a
function of what it measured (the same samples give the same figures).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from .._percentile import nearest_rank

__all__ = ["PERCENTILES", "Samples", "bar", "histogram", "percentiles"]

#: The percentiles a latency summary shows.
PERCENTILES: tuple[float, ...] = (50.0, 90.0, 99.0, 100.0)


def percentiles(values: Sequence[float], pcts: Sequence[float] = PERCENTILES) -> dict[float, float]:
    """``{pct: value}`` by nearest rank (see :mod:`collimate_rl._percentile`)."""
    ordered = sorted(values)
    return {p: nearest_rank(ordered, p) for p in pcts}


def histogram(values: Sequence[float], buckets: int = 10) -> list[tuple[float, float, int]]:
    """``(low, high, count)`` over ``buckets`` equal widths from the least
    to the greatest value; every value lands in exactly one bucket, so the
    counts add up to ``len(values)``."""
    if not values:
        return []
    lo, hi = min(values), max(values)
    if hi == lo:
        return [(lo, hi, len(values))]
    width = (hi - lo) / buckets
    counts = [0] * buckets
    for v in values:
        counts[min(int((v - lo) / width), buckets - 1)] += 1
    return [(lo + i * width, lo + (i + 1) * width, c) for i, c in enumerate(counts)]


def bar(count: int, most: int, width: int = 30) -> str:
    """A bar of ``count`` against ``most``: at least one cell for a nonzero
    count, so a rare bucket is still visible."""
    if most <= 0 or count <= 0:
        return ""
    return "#" * max(1, round(width * count / most))


class Samples:
    """Latencies (ms) appended from worker threads, read from the view's."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: list[float] = []

    def add(self, ms: float) -> None:
        with self._lock:
            self._values.append(ms)

    def values(self) -> list[float]:
        with self._lock:
            return list(self._values)

    def __len__(self) -> int:
        with self._lock:
            return len(self._values)
