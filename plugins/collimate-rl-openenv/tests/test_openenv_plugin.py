"""The OpenEnv plugin: discovered through its entry point; announces whichever
of the two OpenEnv distributions is installed, and warns when both are."""

from __future__ import annotations

import json
import subprocess
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
    # in a fresh interpreter: other tests of this session import OpenEnv
    code = (
        "import sys, collimate_rl.openenv as oe\n"
        "from collimate_rl.openenv import plugin\n"
        "plugin.collimate_rl_announce(); plugin.collimate_rl_local_templates()\n"
        "oe.image_to_template('x:1')\n"
        "assert 'openenv' not in sys.modules and 'collimate_code' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_announces_the_provider(site: Path) -> None:
    install(site, "fake-openenv", "0.10.0")
    assert "CollimateProvider (collimate_rl.openenv)" in plugin.collimate_rl_announce().detail


def test_collimate_plugins_lists_the_provider(openenv_line: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "collimate_rl", "plugins", "--json"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    rows = json.loads(out)
    text = json.dumps(rows)
    assert "collimate-rl-openenv" in text and "CollimateProvider (collimate_rl.openenv)" in text


def test_contributes_the_code_environment_template_when_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from collimate_rl.openenv import templates

    (table,) = plugin.collimate_rl_local_templates()
    assert table["id"] == "collimate-code-env" and table["kind"] == "app"
    assert "-m collimate_code.server" in table["command"] and "{port}" in table["command"]
    assert table["ports"] == [8000] and table["ready_http"] == "/health"
    monkeypatch.setattr(templates, "CODE_ENV_MODULE", "collimate_code_not_installed")
    assert plugin.collimate_rl_local_templates() == []


def test_discovered_through_the_entry_point() -> None:
    pm = new_plugin_manager()
    assert pm.get_plugin("openenv") is plugin
    row = next(i for i in plugin_inventory(pm) if i.plugin == "openenv")
    assert row.distribution == "collimate-rl-openenv"
    assert row.announcements[0].name == "collimate-rl-openenv"


def test_passes_the_plugin_conformance_check() -> None:
    announcement = check_plugin(plugin)
    assert announcement is not None and announcement.name == "collimate-rl-openenv"
