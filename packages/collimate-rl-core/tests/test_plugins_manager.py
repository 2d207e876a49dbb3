"""The plugin manager factory: entry points, env switches, built-ins, tracing.

Installed plugins are simulated by real distributions: a ``*.dist-info``
folder with an ``entry_points.txt`` on ``sys.path``, which is exactly what
``importlib.metadata`` reads for a pip-installed wheel.
"""

from __future__ import annotations

import sys
import textwrap
import uuid
from collections.abc import Callable
from pathlib import Path

import pluggy
import pytest

import collimate_rl
from collimate_rl import plugins
from collimate_rl.plugins import (
    PluginLoadError,
    get_plugin_manager,
    new_plugin_manager,
    reset_plugin_manager,
)
from collimate_rl.plugins.builtin import BUILTIN_PLUGIN_MODULES, register_builtin_plugins

InstallFn = Callable[..., str]


@pytest.fixture
def install_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> InstallFn:
    """Install a throwaway plugin distribution; returns its entry-point name."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    modules: list[str] = []

    def install(body: str, *, dist: str | None = None, ep_name: str | None = None) -> str:
        token = uuid.uuid4().hex[:8]
        module = f"fakeplug_{token}"
        ep_name = ep_name or f"fake{token}"
        dist = dist or f"fake-plugin-{token}"
        (site / f"{module}.py").write_text(
            "from collimate_rl.plugins import hookimpl, PluginAnnouncement\n"
            + textwrap.dedent(body)
        )
        info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text(f"[collimate_rl]\n{ep_name} = {module}\n")
        modules.append(module)
        return ep_name

    yield install  # type: ignore[misc]
    for module in modules:
        sys.modules.pop(module, None)


ANNOUNCE = """
@hookimpl
def collimate_rl_announce():
    return PluginAnnouncement(name="fake", version="1.0")
"""


def test_exported_from_package_roots() -> None:
    assert collimate_rl.get_plugin_manager is plugins.get_plugin_manager
    assert collimate_rl.hookimpl is plugins.hookimpl
    assert collimate_rl.hookspec is plugins.hookspec
    assert "get_plugin_manager" in collimate_rl.__all__


def test_builtins_are_registered_under_their_module_names() -> None:
    pm = new_plugin_manager(load_entrypoints=False)
    for dotted in BUILTIN_PLUGIN_MODULES:
        assert pm.get_plugin(dotted) is sys.modules[dotted]
    assert pm.list_plugin_distinfo() == []


def test_every_hook_has_a_spec() -> None:
    pm = new_plugin_manager(load_entrypoints=False)
    names = {name for name in dir(pm.hook) if name.startswith("collimate_rl_")}
    assert names >= {
        "collimate_rl_announce",
        "collimate_rl_transports",
        "collimate_rl_reward_kinds",
        "collimate_rl_local_templates",
        "collimate_rl_cli_commands",
        "collimate_rl_before_exec",
        "collimate_rl_after_exec",
        "collimate_rl_after_grade",
    }
    for name in names:
        assert getattr(pm.hook, name).spec is not None, name


def test_default_manager_is_cached_and_resettable() -> None:
    reset_plugin_manager()
    try:
        first = get_plugin_manager()
        assert get_plugin_manager() is first
        assert get_plugin_manager(load_entrypoints=False) is not first
        reset_plugin_manager()
        assert get_plugin_manager() is not first
    finally:
        reset_plugin_manager()


def test_entry_point_plugin_is_loaded_with_its_distribution(install_plugin: InstallFn) -> None:
    name = install_plugin(ANNOUNCE, dist="fake-dist-one")
    pm = new_plugin_manager()
    assert pm.get_plugin(name) is not None
    dists = {pm.get_name(p): d.project_name for p, d in pm.list_plugin_distinfo()}
    assert dists[name] == "fake-dist-one"


def test_load_entrypoints_false_skips_installed_plugins(install_plugin: InstallFn) -> None:
    name = install_plugin(ANNOUNCE)
    assert new_plugin_manager(load_entrypoints=False).get_plugin(name) is None


@pytest.mark.parametrize("value", ["1", "true", "YES"])
def test_disable_autoload_env(
    install_plugin: InstallFn, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    name = install_plugin(ANNOUNCE)
    monkeypatch.setenv(plugins.ENV_DISABLE_AUTOLOAD, value)
    pm = new_plugin_manager()
    assert pm.get_plugin(name) is None
    # built-ins are core features, not installed plugins: they stay
    assert pm.get_plugin(BUILTIN_PLUGIN_MODULES[0]) is not None


def test_disable_autoload_env_zero_means_load(
    install_plugin: InstallFn, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = install_plugin(ANNOUNCE)
    monkeypatch.setenv(plugins.ENV_DISABLE_AUTOLOAD, "0")
    assert new_plugin_manager().get_plugin(name) is not None


def test_blocklist_by_entry_point_name(
    install_plugin: InstallFn, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = install_plugin(ANNOUNCE)
    kept = install_plugin(ANNOUNCE)
    monkeypatch.setenv(plugins.ENV_BLOCK, f" {blocked} , other")
    pm = new_plugin_manager()
    assert pm.get_plugin(blocked) is None and pm.is_blocked(blocked)
    assert pm.get_plugin(kept) is not None


def test_blocklist_by_distribution_name(
    install_plugin: InstallFn, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = install_plugin(ANNOUNCE, dist="Fake_Blocked.Dist")
    monkeypatch.setenv(plugins.ENV_BLOCK, "fake-blocked-dist")
    assert new_plugin_manager().get_plugin(name) is None


def test_blocklist_can_remove_a_builtin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(plugins.ENV_BLOCK, "collimate_rl.builtin_transports")
    pm = new_plugin_manager(load_entrypoints=False)
    assert pm.get_plugin("collimate_rl.builtin_transports") is None
    assert plugins.transport_factories(pm) == {}


def test_broken_entry_point_is_named(install_plugin: InstallFn) -> None:
    name = install_plugin("raise RuntimeError('boom at import')\n", dist="broken-dist")
    with pytest.raises(PluginLoadError) as info:
        new_plugin_manager()
    message = str(info.value)
    assert repr(name) in message and "broken-dist" in message and "boom at import" in message
    assert plugins.ENV_BLOCK in message
    # the advice works: blocking it lets the manager build
    assert new_plugin_manager(blocked=[name]).get_plugin(name) is None


def test_misspelt_hook_is_rejected_by_check_pending(install_plugin: InstallFn) -> None:
    install_plugin(
        """
        @hookimpl
        def collimate_rl_anounce():
            return None
        """
    )
    with pytest.raises(pluggy.PluginValidationError, match="collimate_rl_anounce"):
        new_plugin_manager()


def test_missing_builtin_module_is_an_error() -> None:
    pm = new_plugin_manager(load_entrypoints=False, builtins=False)
    with pytest.raises(PluginLoadError, match=r"collimate_rl\.plugins\.builtin\.nope"):
        register_builtin_plugins(pm, ("collimate_rl.plugins.builtin.nope",))


def test_trace_env_writes_hook_calls_to_stderr(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(plugins.ENV_TRACE, "1")
    pm = new_plugin_manager(load_entrypoints=False)
    pm.hook.collimate_rl_announce()
    plugins.transport_factories(pm)
    err = capfd.readouterr().err
    assert "collimate_rl_announce" in err
    assert "collimate_rl_transports" in err  # (the registries call through the hook too)


def test_no_trace_by_default(capfd: pytest.CaptureFixture[str]) -> None:
    pm = new_plugin_manager(load_entrypoints=False, trace=False)
    pm.hook.collimate_rl_announce()
    assert "collimate_rl_announce" not in capfd.readouterr().err
