"""Merged registries: names from every plugin, conflicts named, contracts checked."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

import pluggy
import pytest

from collimate_rl import builtin_transports
from collimate_rl.plugins import (
    PluginConflictError,
    PluginContractError,
    hook_results,
    hookimpl,
    local_templates,
    new_plugin_manager,
    reward_kinds,
    transport_factories,
)


def make_plugin(**hooks: Callable[..., Any]) -> types.ModuleType:
    """A plugin object whose attributes are hook implementations."""
    plugin = types.ModuleType("a_plugin")
    for name, fn in hooks.items():
        setattr(plugin, name, hookimpl(fn))
    return plugin


@pytest.fixture
def pm() -> pluggy.PluginManager:
    return new_plugin_manager(load_entrypoints=False)


def test_builtin_transports_are_daemon_and_gateway(pm: pluggy.PluginManager) -> None:
    factories = transport_factories(pm)
    assert factories == {
        "daemon": builtin_transports.daemon_client,
        "gateway": builtin_transports.gateway_client,
    }


def test_plugin_transport_is_merged(pm: pluggy.PluginManager) -> None:
    def local(**kw: Any) -> str:
        return f"local client {kw}"

    pm.register(make_plugin(collimate_rl_transports=lambda: {"local": local}), name="extra")
    factories = transport_factories(pm)
    assert set(factories) == {"daemon", "gateway", "local"}
    assert factories["local"](x=1) == "local client {'x': 1}"


def test_duplicate_transport_names_both_plugins(pm: pluggy.PluginManager) -> None:
    pm.register(make_plugin(collimate_rl_transports=lambda: {"daemon": print}), name="rogue")
    with pytest.raises(PluginConflictError) as info:
        transport_factories(pm)
    err = info.value
    assert (err.registry, err.name) == ("transport", "daemon")
    assert {err.first, err.second} == {"rogue", "collimate_rl.builtin_transports"}
    assert "'rogue'" in str(err) and "collimate_rl.builtin_transports" in str(err)


def test_reward_kinds_merge_and_conflict(pm: pluggy.PluginManager) -> None:
    def factory(ground_truth: Any, entry: str) -> tuple[Any, str]:
        return ground_truth, entry

    pm.register(make_plugin(collimate_rl_reward_kinds=lambda: {"regex": factory}), name="a")
    pm.register(make_plugin(collimate_rl_reward_kinds=lambda: None), name="silent")
    kinds = reward_kinds(pm)
    assert kinds["regex"] is factory
    pm.register(make_plugin(collimate_rl_reward_kinds=lambda: {"regex": factory}), name="b")
    with pytest.raises(PluginConflictError, match=r"reward kind 'regex'.*'a'.*'b'"):
        reward_kinds(pm)


def test_non_mapping_result_names_the_plugin(pm: pluggy.PluginManager) -> None:
    pm.register(make_plugin(collimate_rl_reward_kinds=lambda: ["regex"]), name="listy")
    with pytest.raises(PluginContractError, match=r"'listy'.*list"):
        reward_kinds(pm)


def test_non_callable_factory_names_the_plugin(pm: pluggy.PluginManager) -> None:
    pm.register(make_plugin(collimate_rl_reward_kinds=lambda: {"x": 3}), name="nocall")
    with pytest.raises(PluginContractError, match=r"'nocall'.*reward kind 'x'"):
        reward_kinds(pm)


def test_empty_name_is_rejected(pm: pluggy.PluginManager) -> None:
    pm.register(make_plugin(collimate_rl_transports=lambda: {"": print}), name="blank")
    with pytest.raises(PluginContractError, match=r"'blank'"):
        transport_factories(pm)


def test_local_templates_keep_their_source(pm: pluggy.PluginManager) -> None:
    table = {"id": "py-fast", "kind": "python"}
    pm.register(make_plugin(collimate_rl_local_templates=lambda: [table]), name="tpl")
    templates = local_templates(pm)
    assert templates["py-fast"].plugin == "tpl"
    assert templates["py-fast"].value == table


def test_local_template_defined_twice_names_both(pm: pluggy.PluginManager) -> None:
    for name in ("one", "two"):
        pm.register(
            make_plugin(collimate_rl_local_templates=lambda: [{"id": "dup", "kind": "shell"}]),
            name=name,
        )
    with pytest.raises(PluginConflictError, match=r"local template 'dup'.*'one'.*'two'"):
        local_templates(pm)


@pytest.mark.parametrize("bad", ["id-as-string", [{"kind": "python"}], [{"id": 7}]])
def test_malformed_templates_are_contract_errors(pm: pluggy.PluginManager, bad: Any) -> None:
    pm.register(make_plugin(collimate_rl_local_templates=lambda: bad), name="bad")
    with pytest.raises(PluginContractError, match=r"'bad'"):
        local_templates(pm)


def test_hook_results_follow_pluggy_order_and_go_through_wrappers(
    pm: pluggy.PluginManager,
) -> None:
    order: list[str] = []

    class Wrapper:
        @hookimpl(wrapper=True)
        def collimate_rl_transports(self) -> Any:
            order.append("wrapper")
            return (yield)

    pm.register(make_plugin(collimate_rl_transports=lambda: {"first": print}), name="first")
    pm.register(make_plugin(collimate_rl_transports=lambda: {"last": print}), name="last")
    pm.register(Wrapper(), name="wrapper")
    names = [plugin for plugin, _ in hook_results(pm, "collimate_rl_transports")]
    plain = [name for name, _ in pm.list_name_plugin() if name in ("first", "last")]
    assert names.index("last") < names.index("first") and plain == ["first", "last"]
    # the wrapper is not a contributor, but it sees every plugin's call
    assert "wrapper" not in names and order == ["wrapper"] * len(names)
    # the merged registry and a plain hook call agree on the contributions
    order.clear()
    merged = transport_factories(pm)
    assert order == ["wrapper"] * len(names)
    called = {k for result in pm.hook.collimate_rl_transports() for k in result}
    assert set(merged) == called


def test_a_plugin_that_cannot_be_hashed_is_a_contract_error(pm: pluggy.PluginManager) -> None:
    pm.register(types.SimpleNamespace(collimate_rl_transports=hookimpl(lambda: {})), name="odd")
    with pytest.raises(PluginContractError, match=r"'odd'.*cannot be hashed"):
        transport_factories(pm)


@pytest.mark.parametrize(
    ("name", "module", "cls"),
    [("daemon", "collimate_rl.client", "CollimateClient"),
     ("gateway", "collimate_rl.gateway", "GatewayClient")],
)  # fmt: skip
def test_builtin_factories_build_the_client_of_the_module_at_call_time(
    pm: pluggy.PluginManager, monkeypatch: pytest.MonkeyPatch, name: str, module: str, cls: str
) -> None:
    # The client modules are resolved when a factory is called (not when the
    # plugin is registered), so the transport layer may import the plugin layer.
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    stand_in = types.ModuleType(module)
    setattr(stand_in, cls, lambda *a, **kw: calls.append((a, kw)) or "client")
    monkeypatch.setitem(sys.modules, module, stand_in)
    factory = transport_factories(pm)[name]
    assert factory("http://127.0.0.1:1", timeout=5) == "client"
    assert calls == [(("http://127.0.0.1:1",), {"timeout": 5})]
