"""Merged registries built from plugin hooks, with attribution.

pluggy returns a hook's results as a bare list, so it cannot say which plugin
produced what. The registries here call each implementation of a hook in
pluggy's order and remember the plugin name, so a name claimed twice is
reported with *both* plugins (never a silent last-one-wins), and a malformed
result is reported with the plugin that returned it.

The helpers are cheap (a handful of function calls and a dict merge): callers
on a hot path may cache the result per plugin manager.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import pluggy

from .errors import PluginConflictError, PluginContractError
from .events import RewardFactory, TransportFactory

__all__ = [
    "Contribution",
    "collect_contributions",
    "each_plugin",
    "hook_results",
    "local_templates",
    "reward_kinds",
    "transport_factories",
]

T = TypeVar("T")


@dataclass(frozen=True)
class Contribution(Generic[T]):
    """One named item of a merged registry and the plugin that provided it."""

    plugin: str
    value: T


def _manager(pm: pluggy.PluginManager | None) -> pluggy.PluginManager:
    if pm is not None:
        return pm
    from .manager import get_plugin_manager

    return get_plugin_manager()


def each_plugin(pm: pluggy.PluginManager, hook_name: str) -> list[tuple[str, Callable[..., Any]]]:
    """``(plugin name, caller)`` for every plugin implementing ``hook_name``,
    in pluggy's call order (last registered first, ``tryfirst`` / ``trylast``
    honoured). Each caller runs that plugin's implementation *through the
    hook*: every wrapper of the hook (``wrapper`` / ``hookwrapper``) sees
    the call, and tracing records it, as for ``pm.hook.<name>(...)``. The
    caller returns that one plugin's result (None when it returned None)."""
    hook = getattr(pm.hook, hook_name)
    firstresult = bool(hook.spec is not None and hook.spec.opts.get("firstresult"))
    impls = [i for i in hook.get_hookimpls() if not (i.hookwrapper or i.wrapper)]
    for impl in impls:
        try:
            hash(impl.plugin)
        except TypeError:
            raise PluginContractError(
                f"plugin {impl.plugin_name!r} is a {type(impl.plugin).__name__}, which cannot be "
                "hashed: register a module, a class or an instance of a plain class"
            ) from None
    out: list[tuple[str, Callable[..., Any]]] = []
    for impl in reversed(impls):
        others = [i.plugin for i in impls if i.plugin is not impl.plugin]
        caller = pm.subset_hook_caller(hook_name, remove_plugins=others)
        out.append((impl.plugin_name, _single(caller, firstresult)))
    return out


def _single(caller: Any, firstresult: bool) -> Callable[..., Any]:
    def call(**kwargs: Any) -> Any:
        result = caller(**kwargs)
        if firstresult:
            return result
        return result[0] if result else None

    return call


def hook_results(pm: pluggy.PluginManager, hook_name: str, **kwargs: Any) -> list[tuple[str, Any]]:
    """Call every implementation of ``hook_name`` through the hook (see
    :func:`each_plugin`); return ``(plugin name, result)`` in pluggy's call
    order. ``None`` results are kept: the caller decides what they mean."""
    return [(name, call(**kwargs)) for name, call in each_plugin(pm, hook_name)]


def collect_contributions(
    pm: pluggy.PluginManager,
    hook_name: str,
    registry: str,
    items: Callable[[str, Any], Sequence[tuple[str, T]]] | None = None,
) -> dict[str, Contribution[T]]:
    """Merge named items from every plugin; a duplicate name raises.

    By default each hook result must be a mapping of ``str`` names; ``items``
    turns a result of another shape into ``(name, value)`` pairs.
    """
    merged: dict[str, Contribution[T]] = {}
    # Registration order (the reverse of pluggy's call order), so a conflict
    # names the plugin that was there first, first.
    for plugin, result in reversed(hook_results(pm, hook_name)):
        if result is None:
            continue
        pairs = items(plugin, result) if items is not None else _mapping_items(plugin, result)
        for name, value in pairs:
            if not isinstance(name, str) or not name:
                raise PluginContractError(
                    f"plugin {plugin!r} returned an invalid {registry} name {name!r} "
                    f"from {hook_name} (a non-empty str is required)"
                )
            if name in merged:
                raise PluginConflictError(registry, name, merged[name].plugin, plugin)
            merged[name] = Contribution(plugin, value)
    return merged


def _mapping_items(plugin: str, result: Any) -> list[tuple[str, Any]]:
    if not isinstance(result, Mapping):
        raise PluginContractError(
            f"plugin {plugin!r} returned {type(result).__name__}, expected a mapping of names"
        )
    return list(result.items())


def _callable_values(registry: str, merged: Mapping[str, Contribution[Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, c in merged.items():
        if not callable(c.value):
            raise PluginContractError(
                f"plugin {c.plugin!r} registered {registry} {name!r} as "
                f"{type(c.value).__name__}, expected a callable factory"
            )
        out[name] = c.value
    return out


def reward_kinds(pm: pluggy.PluginManager | None = None) -> dict[str, RewardFactory]:
    """Every reward kind (``ground_truth["kind"]`` -> factory), merged across plugins."""
    merged: dict[str, Contribution[RewardFactory]] = collect_contributions(
        _manager(pm), "collimate_rl_reward_kinds", "reward kind"
    )
    return _callable_values("reward kind", merged)


def transport_factories(pm: pluggy.PluginManager | None = None) -> dict[str, TransportFactory]:
    """Every named transport ``connect(transport=NAME)`` can resolve."""
    merged: dict[str, Contribution[TransportFactory]] = collect_contributions(
        _manager(pm), "collimate_rl_transports", "transport"
    )
    return _callable_values("transport", merged)


def _template_items(plugin: str, result: Any) -> list[tuple[str, Mapping[str, Any]]]:
    if isinstance(result, (str, bytes)) or not isinstance(result, Sequence):
        raise PluginContractError(
            f"plugin {plugin!r} returned {type(result).__name__} from "
            f"collimate_rl_local_templates, expected a sequence of template tables"
        )
    pairs: list[tuple[str, Mapping[str, Any]]] = []
    for table in result:
        if not isinstance(table, Mapping) or not isinstance(table.get("id"), str):
            raise PluginContractError(
                f"plugin {plugin!r} contributed a local template without a str 'id': {table!r}"
            )
        pairs.append((table["id"], table))
    return pairs


def local_templates(
    pm: pluggy.PluginManager | None = None,
) -> dict[str, Contribution[Mapping[str, Any]]]:
    """Every plugin-contributed local-backend template, by id, with its source.

    The source plugin is kept so the backend can name it when a template of
    its config file collides with a plugin's.
    """
    return collect_contributions(
        _manager(pm), "collimate_rl_local_templates", "local template", _template_items
    )
