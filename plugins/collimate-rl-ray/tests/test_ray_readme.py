"""The README's Python example, run as written (a fresh interpreter, the
cluster named by ``RAY_ADDRESS`` as ``ray.init(address="auto")`` reads
it): it starts the graders, grades through them from a Ray task with no
URL set, shows each node's grader, and stops them. (It runs last: its
``down()`` stops the session's graders; the fixture's own ``down()`` at
the end finds nothing left to stop.)"""

from __future__ import annotations

from pathlib import Path

import ray  # noqa: F401  (the example runs on Ray)

from collimate_rl.ray.testing import TARGET_ENV, RayCluster
from collimate_rl.testing.readme import python_blocks, run_snippet

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_example_runs_on_the_cluster(ray_cluster: RayCluster) -> None:
    (block,) = python_blocks(README)
    env = {"RAY_ADDRESS": ray_cluster.cluster.address, **dict.fromkeys(TARGET_ENV, "")}
    out = run_snippet(block, env=env)
    assert out[0] == "42"
    rows = [line.split() for line in out[1:]]
    assert len(rows) >= 3 and all(row[2] == "ok" for row in rows)
    assert {row[0] for row in rows} >= {n[:8] for n in ray_cluster.node_ids}
