"""The TRL plugin: found through its entry point, announces TRL's version
from package metadata, and never imports TRL (nor torch)."""

from __future__ import annotations

import subprocess
import sys

import collimate_rl.trl
from collimate_rl.plugins import check_plugin, new_plugin_manager, plugin_inventory
from collimate_rl.plugins.frameworks import distribution_version
from collimate_rl.trl import plugin


def test_subpackage_imports_with_its_version() -> None:
    assert collimate_rl.trl.__version__ == plugin.__version__


def test_announces_the_framework_from_metadata() -> None:
    a = plugin.collimate_rl_announce()
    assert (a.name, a.framework) == ("collimate-rl-trl", "trl")
    assert a.framework_version == distribution_version("trl")


def test_discovered_through_the_entry_point() -> None:
    pm = new_plugin_manager()
    assert pm.get_plugin("trl") is plugin
    row = next(i for i in plugin_inventory(pm) if i.plugin == "trl")
    assert row.distribution == "collimate-rl-trl"


def test_passes_the_plugin_conformance_check() -> None:
    announcement = check_plugin(plugin)
    assert announcement is not None and announcement.name == "collimate-rl-trl"


def test_importing_the_plugin_imports_no_framework() -> None:
    code = (
        "import sys, collimate_rl.trl\n"
        "from collimate_rl.plugins import new_plugin_manager\n"
        "new_plugin_manager()\n"
        "print(sorted(m for m in ('trl', 'torch', 'transformers') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_announces_what_it_gives_trl_all_importable() -> None:
    """What TRL gets is registered without user code: named by the plugin's
    announcement (``collimate plugins``) and importable from ``collimate_rl.trl``."""
    detail = plugin.collimate_rl_announce().detail
    for name in ("CollimateReward", "CodeEnvironment", "PythonEnvironment", "python"):
        assert name in detail
        assert name in collimate_rl.trl.__all__ and getattr(collimate_rl.trl, name)
