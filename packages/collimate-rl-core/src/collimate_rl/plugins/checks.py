"""A conformance check for plugin authors: load a plugin the way core will.

``check_plugin(my_plugin_module)`` in a plugin's own tests catches, before any
user does: a misspelt hook name, a hook with the wrong arguments, an
announcement of the wrong type, a registry result of the wrong shape, and a
name that collides with one of core's built-ins (a transport, a reward kind,
a template, a CLI subcommand).
"""

from __future__ import annotations

from .errors import PluginContractError
from .events import PluginAnnouncement
from .manager import new_plugin_manager
from .registry import hook_results, local_templates, reward_kinds, transport_factories

__all__ = ["check_plugin"]


def check_plugin(plugin: object, name: str | None = None) -> PluginAnnouncement | None:
    """Register ``plugin`` next to core's built-ins and exercise every hook it
    implements that can be called without a live run. Returns its
    announcement (``None`` if it does not announce); raises on any problem.
    """
    pm = new_plugin_manager(load_entrypoints=False, trace=False)
    if pm.get_name(plugin) is not None:  # one of core's built-ins: check it alone
        pm.unregister(plugin)
    registered = pm.register(plugin, name=name)
    assert registered is not None
    pm.check_pending()
    implemented = {caller.name for caller in pm.get_hookcallers(plugin) or ()}

    announcement: PluginAnnouncement | None = None
    if "collimate_rl_announce" in implemented:
        for owner, result in hook_results(pm, "collimate_rl_announce"):
            if owner != registered:
                continue
            if not isinstance(result, PluginAnnouncement):
                raise PluginContractError(
                    f"plugin {registered!r}: collimate_rl_announce returned "
                    f"{type(result).__name__}, not PluginAnnouncement"
                )
            if not result.name or not result.version:
                raise PluginContractError(
                    f"plugin {registered!r}: its announcement needs a name and a version"
                )
            announcement = result
    if "collimate_rl_transports" in implemented:
        transport_factories(pm)
    if "collimate_rl_reward_kinds" in implemented:
        reward_kinds(pm)
    if "collimate_rl_local_templates" in implemented:
        local_templates(pm)
    if "collimate_rl_cli_commands" in implemented:
        from .parser import build_parser

        build_parser(pm)
    return announcement
