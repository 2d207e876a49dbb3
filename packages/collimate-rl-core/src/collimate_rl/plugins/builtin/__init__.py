"""Core's own features, registered through the same hooks as any plugin.

``BUILTIN_PLUGIN_MODULES`` is the one list of them. To add a built-in plugin,
write a module with ``@hookimpl`` functions beside the feature it registers
and add its dotted name here. A listed module that cannot be imported is an
error (never skipped): a missing built-in would silently remove a core
feature such as a transport.

The list is names, not imports: the modules are imported when a manager is
built, as installed plugins' entry points are, so this layer (below the
transports, the rewards and the CLI's commands) never imports the features
above it that register through it (docs/architecture.md, "Layers of core").
"""

from __future__ import annotations

import importlib

import pluggy

from ..errors import PluginLoadError

__all__ = ["BUILTIN_PLUGIN_MODULES", "register_builtin_plugins"]

#: Dotted module names, registered in this order under their own names. The
#: CLI adds subcommands in pluggy's call order (last registered first): the
#: feature commands come before ``builtin.commands`` here so that ``collimate
#: --help`` lists plugins, version, serve, doctor, then the views (demo, burst,
#: rl, launch, fleet, top), grade, bake, images, status.
BUILTIN_PLUGIN_MODULES: tuple[str, ...] = (
    "collimate_rl.plugins.builtin.core",
    "collimate_rl.builtin_transports",
    "collimate_rl.gateway_flows.builtin_commands",
    "collimate_rl.dataset_grading.builtin_commands",
    "collimate_rl.views.builtin_commands",
    "collimate_rl.plugins.builtin.commands",
    "collimate_rl.rewards.builtin_kinds",
    "collimate_rl.local_backend.builtin_templates",
)


def register_builtin_plugins(
    pm: pluggy.PluginManager, modules: tuple[str, ...] = BUILTIN_PLUGIN_MODULES
) -> None:
    """Import and register each built-in plugin module not blocked in ``pm``."""
    for dotted in modules:
        if pm.is_blocked(dotted) or pm.get_plugin(dotted) is not None:
            continue
        try:
            module = importlib.import_module(dotted)
        except ImportError as exc:
            raise PluginLoadError(
                f"built-in plugin module {dotted!r} could not be imported: {exc}"
            ) from exc
        pm.register(module, name=dotted)
