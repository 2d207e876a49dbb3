"""A real multi-node Ray cluster on this machine, shared by the tests
(:func:`collimate_rl.ray.testing.local_cluster`: a head and two more nodes,
each a raylet of its own, so three graders and three node ids).

Starting it and the graders takes seconds: one cluster serves the whole
session. Tests that add or remove a node add their own and leave the three
base nodes as they were. Without Ray (``hatch test``'s environment) the modules that need it are
not collected at all, rather than reported as skipped: the ray column
(``hatch run ray:test``, which sets ``COLLIMATE_RAY_COLUMN``) runs them, and
fails there if Ray is missing.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from typing import Any

import pytest

#: what needs Ray installed (the rest runs anywhere)
NEEDS_RAY = [
    "test_ray_adapters.py",
    "test_ray_cli.py",
    "test_ray_graders.py",
    "test_ray_node_loss.py",
    "test_ray_readme.py",
]
if os.environ.get("COLLIMATE_RAY_COLUMN") != "1" and importlib.util.find_spec("ray") is None:
    collect_ignore = NEEDS_RAY


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    from collimate_rl.ray.testing import local_cluster

    with local_cluster(3) as cluster:
        yield cluster
