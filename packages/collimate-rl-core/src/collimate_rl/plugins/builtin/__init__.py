"""Core's own features, registered through the same hooks as any plugin.

``BUILTIN_PLUGIN_MODULES`` is the one list of them. To add a built-in plugin,
write a module with ``@hookimpl`` functions and append its dotted name here.
A listed module that cannot be imported is an error (never skipped): a
missing built-in would silently remove a core feature such as a transport.
"""

from __future__ import annotations

import importlib

import pluggy

from ..errors import PluginLoadError

__all__ = ["BUILTIN_PLUGIN_MODULES", "register_builtin_plugins"]

#: Dotted module names, registered in this order under their own names.
BUILTIN_PLUGIN_MODULES: tuple[str, ...] = (
    "collimate_rl.plugins.builtin.core",
    "collimate_rl.plugins.builtin.transports",
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
