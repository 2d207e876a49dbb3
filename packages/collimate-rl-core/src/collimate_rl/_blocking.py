"""The blocking counterparts of :mod:`collimate_rl._aio`, by the same names.

``tools/unasync.py`` turns ``from .._aio import x`` into ``from .._blocking
import x`` in the blocking twins it generates, so each helper here does, in
one thread and without an event loop, what its namesake does with coroutines.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

__all__ = ["gather_all"]

T = TypeVar("T")


def gather_all(values: Iterable[T]) -> list[T]:
    """The results of calls made one after another (a blocking caller has
    nothing to overlap them with), in order."""
    return list(values)
