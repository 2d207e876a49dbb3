"""The repository's test run as a whole (``hatch test``): how many workers.

``hatch test`` runs the suite on pytest-xdist workers (``-n auto``, in
hatch.toml). The tests mostly wait: on servers they start, on sandboxes'
processes, on sockets; a run on one worker leaves the machine about 80%
idle. So ``auto`` means twice the cores here (four on two), at most
eight; ``COLLIMATE_TEST_WORKERS=N`` overrides (``0``: no workers, the
tests run in pytest's own process, e.g. under a debugger).
"""

from __future__ import annotations

import os

import pytest


@pytest.hookimpl(optionalhook=True)  # (an environment without xdist: the columns)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    wanted = os.environ.get("COLLIMATE_TEST_WORKERS", "").strip()
    if wanted:
        return max(0, int(wanted)) if wanted.isdigit() else _refuse(wanted)
    return min(8, 2 * (os.cpu_count() or 1))


def _refuse(wanted: str) -> int:
    raise pytest.UsageError(f"COLLIMATE_TEST_WORKERS must be a whole number, got {wanted!r}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files that hold slow tests first, the rest in their order.

    Under ``--dist loadfile`` a worker takes one file at a time, in the
    order collected: the long files (fresh venvs, time budgets, hundreds of
    grades) then start at once and the short ones fill in around them,
    instead of one long file starting last and running alone at the end.
    """
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)  # (a stable sort)
