"""The OpenEnv plugin: discovered through its entry point; announces whichever
of the two OpenEnv distributions is installed, and warns when both are."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import collimate_rl.openenv
from collimate_rl.openenv import plugin
from collimate_rl.plugins import check_plugin, new_plugin_manager, plugin_inventory


@pytest.fixture
def site(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A site dir where fake distributions are 'installed'; OpenEnv names are
    renamed so a real OpenEnv in the environment cannot leak into the test."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(plugin, "OPENENV_DISTRIBUTIONS", ("fake-openenv", "fake-openenv-core"))
    return tmp_path


def install(site: Path, name: str, version: str) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def test_subpackage_imports_with_its_version() -> None:
    assert collimate_rl.openenv.__version__ == plugin.__version__


def test_not_installed(site: Path) -> None:
    a = plugin.collimate_rl_announce()
    assert (a.name, a.framework, a.framework_version) == (
        "collimate-rl-openenv",
        "openenv",
        None,
    )
    assert "install openenv" in a.detail


def test_openenv_core_alone(site: Path) -> None:
    install(site, "fake-openenv-core", "0.3.0")
    a = plugin.collimate_rl_announce()
    assert a.framework_version == "0.3.0" and "'fake-openenv-core'" in a.detail
    assert "WARNING" not in a.detail


def test_both_names_installed_prefers_openenv_and_warns(site: Path) -> None:
    install(site, "fake-openenv", "0.10.0")
    install(site, "fake-openenv-core", "0.3.0")
    a = plugin.collimate_rl_announce()
    assert a.framework_version == "0.10.0"
    assert "WARNING" in a.detail and "fake-openenv-core 0.3.0" in a.detail


def test_real_names_are_checked_and_nothing_is_imported() -> None:
    assert plugin.OPENENV_DISTRIBUTIONS == ("openenv", "openenv-core")
    plugin.collimate_rl_announce()
    assert "openenv" not in sys.modules


def test_discovered_through_the_entry_point() -> None:
    pm = new_plugin_manager()
    assert pm.get_plugin("openenv") is plugin
    row = next(i for i in plugin_inventory(pm) if i.plugin == "openenv")
    assert row.distribution == "collimate-rl-openenv"
    assert row.announcements[0].name == "collimate-rl-openenv"


def test_passes_the_plugin_conformance_check() -> None:
    announcement = check_plugin(plugin)
    assert announcement is not None and announcement.name == "collimate-rl-openenv"
