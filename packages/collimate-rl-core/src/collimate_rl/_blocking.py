"""The blocking counterparts of :mod:`collimate_rl._aio`, by the same names.

``tools/unasync.py`` turns ``from .._aio import x`` into ``from .._blocking
import x`` in the blocking twins it generates, so each helper here does, in
one thread and without an event loop, what its namesake does with coroutines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["gather_all", "run_each"]

T = TypeVar("T")


def gather_all(values: Iterable[T]) -> list[T]:
    """The results of calls made one after another (a blocking caller has
    nothing to overlap them with), in order."""
    return list(values)


def run_each(
    worker: Callable[[int], Any], n: int, limit: int
) -> tuple[list[Any], dict[int, BaseException]]:
    """``worker(i)`` for ``i`` in ``range(n)`` on a pool of ``limit``
    threads: the results by position, and the exceptions by position of
    those that raised one."""
    if n == 0:
        return [], {}
    outcomes: list[Any] = [None] * n
    errors: dict[int, BaseException] = {}

    def guarded(i: int) -> None:
        try:
            outcomes[i] = worker(i)
        except BaseException as exc:
            errors[i] = exc

    with ThreadPoolExecutor(max_workers=limit) as ex:
        list(ex.map(guarded, range(n)))
    return outcomes, errors
