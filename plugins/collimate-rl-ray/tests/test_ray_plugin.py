"""What the plugin does without a cluster (these run wherever the plugin
is installed, Ray or not): importing it and ``connect()`` outside a Ray
job never import Ray and leave the default address as it was; the
``collimate ray`` command is there; the status table's layout."""

from __future__ import annotations

import subprocess
import sys

import pytest

from collimate_rl.plugins import check_plugin
from collimate_rl.ray import __version__, plugin
from collimate_rl.ray.cli import format_status

_OUTSIDE_RAY = """
import sys
import collimate_rl, collimate_rl.ray, collimate_rl.ray.plugin
from collimate_rl import connect
from collimate_rl.plugins import get_plugin_manager
from collimate_rl.ray.discovery import cluster_client
names = [get_plugin_manager().get_name(p) for p in get_plugin_manager().get_plugins()]
client = connect()
nothing = cluster_client(False, False, {}) is None and cluster_client(True, False, {}) is None
print(client.endpoint, "ray" in sys.modules, "ray" in names, nothing)
"""


def test_outside_ray_connect_keeps_the_default_and_never_imports_ray() -> None:
    env = {"PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", _OUTSIDE_RAY], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["http://127.0.0.1:8080", "False", "True", "True"]


def test_the_plugin_passes_cores_checks() -> None:
    announcement = check_plugin(plugin)
    assert announcement is not None
    assert (announcement.name, announcement.version) == ("collimate-rl-ray", __version__)
    assert announcement.framework == "ray"


def test_the_collimate_ray_command_is_there() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "collimate_rl", "ray", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    for action in ("up", "status", "down"):
        assert action in done.stdout


@pytest.mark.parametrize("restarted", [False, True])
def test_format_status_aligns_one_node_a_line(restarted: bool) -> None:
    row = {
        "node_id": "a" * 40,
        "url": "http://10.0.0.1:4000",
        "health": "ok",
        "restarted": restarted,
        "load": 0.5,
        "in_flight": 1,
        "run_slots": 2,
        "queued": 0,
        "execs_run": 7,
    }
    missing = {**row, "node_id": "b" * 40, "url": None, "health": "missing", "restarted": False}
    lines = format_status([row, missing]).splitlines()
    assert len(lines) == 3
    health = ["ok", "(restarted)"] if restarted else ["ok"]
    assert lines[1].split() == ["a" * 12, "http://10.0.0.1:4000", *health, "0.50", "1/2", "0", "7"]
    assert lines[2].split()[:3] == ["b" * 12, "-", "missing"]
    # the columns line up: each value starts where its heading does
    assert lines[0].index("health") == lines[1].index("ok") == lines[2].index("missing")
