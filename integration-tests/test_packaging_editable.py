"""The editable workspace layout (the hatch environments): each distribution's
``src/`` is on ``sys.path`` separately, and core's ``__init__`` extends the
package path so ``collimate_rl.skyrl`` and friends still resolve and are
discovered through their entry points, exactly as from built wheels."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import collimate_rl
from collimate_rl.plugins import new_plugin_manager

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = ("skyrl", "openenv", "slime")


@pytest.mark.parametrize("plugin", PLUGINS)
def test_plugin_imports_from_its_own_source_tree(plugin: str) -> None:
    module = importlib.import_module(f"collimate_rl.{plugin}")
    src = ROOT / "plugins" / f"collimate-rl-{plugin}" / "src" / "collimate_rl" / plugin
    assert Path(module.__file__ or "").resolve().parent == src.resolve()
    about = importlib.import_module(f"collimate_rl.{plugin}.__about__")
    assert module.__version__ == about.__version__


def test_core_package_path_spans_every_distribution() -> None:
    roots = {Path(p).resolve().parents[1].name for p in collimate_rl.__path__}
    assert {"collimate-rl-core", *(f"collimate-rl-{p}" for p in PLUGINS)} <= roots


def test_every_plugin_is_discovered_with_its_distribution() -> None:
    pm = new_plugin_manager()
    found = {pm.get_name(p): (d.project_name, d.version) for p, d in pm.list_plugin_distinfo()}
    for plugin in PLUGINS:
        version = importlib.import_module(f"collimate_rl.{plugin}").__version__
        assert found[plugin] == (f"collimate-rl-{plugin}", version)
        assert pm.get_plugin(plugin) is importlib.import_module(f"collimate_rl.{plugin}.plugin")


def test_collimate_plugins_lists_all_three(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("collimate")
    out = subprocess.run(
        [str(script), "plugins", "--json"], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    rows = {row["plugin"]: row for row in json.loads(out.stdout)}
    for plugin in PLUGINS:
        assert rows[plugin]["distribution"] == f"collimate-rl-{plugin}"
        assert rows[plugin]["announcements"][0]["name"] == f"collimate-rl-{plugin}"
        assert rows[plugin]["error"] is None
