"""The verl plugin: found through its entry point, announces verl's version
from package metadata, and never imports verl (nor torch, ray)."""

from __future__ import annotations

import subprocess
import sys

import collimate_rl.verl
from collimate_rl.plugins import check_plugin, new_plugin_manager, plugin_inventory
from collimate_rl.plugins.frameworks import distribution_version
from collimate_rl.verl import plugin


def test_subpackage_imports_with_its_version() -> None:
    assert collimate_rl.verl.__version__ == plugin.__version__


def test_announces_the_framework_from_metadata() -> None:
    a = plugin.collimate_rl_announce()
    assert (a.name, a.framework) == ("collimate-rl-verl", "verl")
    assert a.framework_version == distribution_version("verl")


def test_discovered_through_the_entry_point() -> None:
    pm = new_plugin_manager()
    assert pm.get_plugin("verl") is plugin
    row = next(i for i in plugin_inventory(pm) if i.plugin == "verl")
    assert row.distribution == "collimate-rl-verl"


def test_passes_the_plugin_conformance_check() -> None:
    announcement = check_plugin(plugin)
    assert announcement is not None and announcement.name == "collimate-rl-verl"


def test_importing_the_plugin_imports_no_framework() -> None:
    code = (
        "import sys, collimate_rl.verl\n"
        "from collimate_rl.plugins import new_plugin_manager\n"
        "new_plugin_manager()\n"
        "print(sorted(m for m in ('verl', 'torch', 'ray') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
