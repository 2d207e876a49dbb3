"""The slime plugin: slime is not on PyPI, so the announcement looks for an
importable ``slime`` module (without importing it)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import collimate_rl.slime
from collimate_rl.plugins import check_plugin, new_plugin_manager, plugin_inventory
from collimate_rl.slime import plugin


@pytest.fixture
def site(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A source checkout of a fake framework module that explodes on import."""
    module = "fake_slime_" + tmp_path.name.replace("-", "_")
    (tmp_path / module).mkdir()
    (tmp_path / module / "__init__.py").write_text("raise RuntimeError('imported!')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(plugin, "FRAMEWORK_MODULE", module)
    return tmp_path


def test_subpackage_imports_with_its_version() -> None:
    assert collimate_rl.slime.__version__ == plugin.__version__


def test_not_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plugin, "FRAMEWORK_MODULE", "no_such_slime_module")
    a = plugin.collimate_rl_announce()
    assert (a.name, a.framework, a.framework_version) == ("collimate-rl-slime", "slime", None)
    assert "not importable" in a.detail


def test_source_checkout_on_sys_path(site: Path) -> None:
    a = plugin.collimate_rl_announce()
    assert a.framework_version == "unknown" and a.detail == ""
    assert plugin.FRAMEWORK_MODULE not in sys.modules


def test_installed_checkout_reports_its_distribution_version(site: Path) -> None:
    module = plugin.FRAMEWORK_MODULE
    info = site / "slime-0.2.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: slime\nVersion: 0.2.1\n")
    (info / "top_level.txt").write_text(f"{module}\n")
    a = plugin.collimate_rl_announce()
    assert a.framework_version == "0.2.1"
    assert module not in sys.modules


def test_discovered_through_the_entry_point() -> None:
    pm = new_plugin_manager()
    assert pm.get_plugin("slime") is plugin
    row = next(i for i in plugin_inventory(pm) if i.plugin == "slime")
    assert row.distribution == "collimate-rl-slime"
    assert row.announcements[0].framework == "slime"


def test_passes_the_plugin_conformance_check() -> None:
    announcement = check_plugin(plugin)
    assert announcement is not None and announcement.name == "collimate-rl-slime"
