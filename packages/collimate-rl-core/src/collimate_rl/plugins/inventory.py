"""What is installed: one row per registered plugin, for ``collimate plugins``.

A row joins three sources: the plugin's registered name, the distribution it
was loaded from (pluggy records it for entry-point plugins; built-ins ship in
``collimate-rl-core``), and its own ``collimate_rl_announce``. A plugin whose
announcement raises still gets a row, with the error, so one broken plugin
does not hide the others from the command meant to diagnose it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pluggy

from ..__about__ import __version__ as core_version
from .builtin import BUILTIN_PLUGIN_MODULES
from .events import PluginAnnouncement
from .registry import each_plugin

__all__ = ["PluginInfo", "plugin_inventory"]


@dataclass(frozen=True)
class PluginInfo:
    """One registered plugin as ``collimate plugins`` shows it."""

    plugin: str  # the name it is registered under (entry-point name for installed plugins)
    distribution: str | None  # e.g. "collimate-rl-skyrl"; None when registered by hand
    distribution_version: str | None
    announcements: tuple[PluginAnnouncement, ...] = ()
    error: str | None = None  # the announce hook raised
    hooks: tuple[str, ...] = ()  # the hooks it implements, sorted

    @property
    def builtin(self) -> bool:
        return self.plugin in BUILTIN_PLUGIN_MODULES


def plugin_inventory(pm: pluggy.PluginManager | None = None) -> list[PluginInfo]:
    """Every registered plugin, in registration order, with its announcements."""
    if pm is None:
        from .manager import get_plugin_manager

        pm = get_plugin_manager()
    dists: dict[int, tuple[str, str]] = {
        id(plugin): (str(dist.project_name), str(dist.version))
        for plugin, dist in pm.list_plugin_distinfo()
    }
    announcers = dict(each_plugin(pm, "collimate_rl_announce"))
    rows: list[PluginInfo] = []
    for name, plugin in pm.list_name_plugin():
        if plugin is None:  # a blocked name
            continue
        dist: tuple[str | None, str | None] = dists.get(id(plugin), (None, None))
        if dist == (None, None) and name in BUILTIN_PLUGIN_MODULES:
            dist = ("collimate-rl-core", core_version)
        announced: tuple[PluginAnnouncement, ...] = ()
        error: str | None = None
        announce = announcers.get(name)
        if announce is not None:
            try:
                result = announce()
            except Exception as exc:  # shown, not raised: see the module docstring
                error = f"{type(exc).__name__}: {exc}"
            else:
                if isinstance(result, PluginAnnouncement):
                    announced = (result,)
                elif result is not None:
                    error = f"announce returned {type(result).__name__}, not PluginAnnouncement"
        hooks = tuple(sorted(caller.name for caller in pm.get_hookcallers(plugin) or ()))
        rows.append(PluginInfo(name, dist[0], dist[1], announced, error, hooks))
    return rows
