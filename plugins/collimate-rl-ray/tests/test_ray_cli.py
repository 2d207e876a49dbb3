"""``collimate ray up | status | down`` as a user runs them (a subprocess
joining the running cluster by its address), the plugin's announcement,
and ``ray://`` naming the graders explicitly."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import ray

from collimate_rl import connect
from collimate_rl.nodes import MultiNodeClient
from collimate_rl.plugins import get_plugin_manager
from collimate_rl.ray import kv
from collimate_rl.ray.testing import RayCluster


def _collimate(cluster: RayCluster, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, RAY_ADDRESS=cluster.cluster.address)
    return subprocess.run(
        [sys.executable, "-m", "collimate_rl", "ray", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )


def test_status_shows_each_nodes_grader_load_and_health(ray_cluster: RayCluster) -> None:
    done = _collimate(ray_cluster, "status", "--json")
    assert done.returncode == 0, done.stderr
    rows = {row["node_id"]: row for row in json.loads(done.stdout)}
    assert set(ray_cluster.node_ids) <= set(rows)
    for node_id in ray_cluster.node_ids:
        row = rows[node_id]
        assert row["health"] == "ok" and row["url"] == kv.grader_records()[node_id]["url"]
        assert row["run_slots"] >= 1 and row["load"] >= 0
    table = _collimate(ray_cluster, "status")
    assert table.returncode == 0
    lines = table.stdout.splitlines()
    assert lines[0].split()[:3] == ["node", "grader", "health"]
    assert sum(" ok " in f" {line} " for line in lines[1:]) >= 3
    # the secret is nowhere in what the commands print
    secret = kv.secret(create=False)
    assert secret and secret not in done.stdout + done.stderr + table.stdout + table.stderr


def test_up_again_changes_nothing_that_runs(ray_cluster: RayCluster) -> None:
    pids = {n: r["pid"] for n, r in kv.grader_records().items()}
    done = _collimate(ray_cluster, "up")
    assert done.returncode == 0, done.stderr
    assert {n: r["pid"] for n, r in kv.grader_records().items()} == pids


def test_ray_url_names_the_graders(
    ray_cluster: RayCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLLIMATE_SERVE_URL", "ray://")
    with connect() as client:
        assert isinstance(client, MultiNodeClient)
        assert client.exec_once("py", code="print('via ray://')")["stdout"] == "via ray://\n"


def test_the_plugin_announces_ray() -> None:
    found = [
        a for a in get_plugin_manager().hook.collimate_rl_announce() if a.name == "collimate-rl-ray"
    ]
    assert len(found) == 1 and found[0].framework == "ray"
    assert found[0].framework_version == ray.__version__
