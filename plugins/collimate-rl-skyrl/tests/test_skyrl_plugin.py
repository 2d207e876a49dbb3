"""The SkyRL plugin: discovered through its entry point, announces skyrl-gym.

"Installed" frameworks are real distribution metadata (a ``*.dist-info`` on
``sys.path``), which is all the announcement may look at.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import collimate_rl.skyrl
from collimate_rl.plugins import check_plugin, new_plugin_manager, plugin_inventory
from collimate_rl.skyrl import plugin


def fake_distribution(site: Path, name: str, version: str) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def test_subpackage_imports_with_its_version() -> None:
    assert collimate_rl.skyrl.__version__ == plugin.__version__
    assert Path(collimate_rl.skyrl.__file__).parent.name == "skyrl"


def test_announcement_without_skyrl_gym(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plugin, "FRAMEWORK", "skyrl-gym-not-installed-here")
    a = plugin.collimate_rl_announce()
    assert (a.name, a.version) == ("collimate-rl-skyrl", collimate_rl.skyrl.__version__)
    assert a.framework == "skyrl-gym-not-installed-here" and a.framework_version is None


def test_announcement_reads_the_installed_version_without_importing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake_distribution(tmp_path, "skyrl-gym", "0.4.0")
    # a skyrl_gym that explodes on import proves the announcement never imports it
    (tmp_path / "skyrl_gym").mkdir()
    (tmp_path / "skyrl_gym" / "__init__.py").write_text("raise RuntimeError('imported!')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    # other tests of this process may have imported the real one: forget it here
    for name in [m for m in sys.modules if m == "skyrl_gym" or m.startswith("skyrl_gym.")]:
        monkeypatch.delitem(sys.modules, name)
    a = plugin.collimate_rl_announce()
    assert (a.framework, a.framework_version) == ("skyrl-gym", "0.4.0")
    assert "skyrl_gym" not in sys.modules


def test_discovered_through_the_entry_point() -> None:
    pm = new_plugin_manager()
    assert pm.get_plugin("skyrl") is plugin
    dists = {pm.get_name(p): d.project_name for p, d in pm.list_plugin_distinfo()}
    assert dists["skyrl"] == "collimate-rl-skyrl"
    row = next(i for i in plugin_inventory(pm) if i.plugin == "skyrl")
    assert row.announcements[0].name == "collimate-rl-skyrl" and row.error is None


def test_blockable_by_distribution_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLLIMATE_RL_BLOCK_PLUGINS", "collimate-rl-skyrl")
    assert new_plugin_manager().get_plugin("skyrl") is None


def test_passes_the_plugin_conformance_check() -> None:
    announcement = check_plugin(plugin)
    assert announcement is not None and announcement.name == "collimate-rl-skyrl"
