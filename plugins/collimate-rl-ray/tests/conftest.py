"""A real multi-node Ray cluster on this machine, shared by the tests
(:func:`collimate_rl.ray.testing.local_cluster`: a head and two more nodes,
each a raylet of its own, so three graders and three node ids).

Starting it and the graders takes seconds: one cluster serves the whole
session. Tests that add or remove a node add their own and leave the three
base nodes as they were. Ray is imported inside the fixture: without Ray
(``hatch test`` outside the ray column) each test module skips itself by
``importorskip``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    from collimate_rl.ray.testing import local_cluster

    with local_cluster(3) as cluster:
        yield cluster
