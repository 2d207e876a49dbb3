"""The plugin system of collimate-rl (pluggy, project name ``collimate_rl``).

Write a plugin as a module of ``@hookimpl`` functions named after the hooks in
:mod:`collimate_rl.plugins.hookspecs`, and declare it in your distribution::

    [project.entry-points.collimate_rl]
    myplugin = "my_package.collimate_plugin"

What a plugin may use of core is public: the names of this package, of
``collimate_rl`` and of core's other public modules (a plugin never imports a
module of core whose path has a ``_`` part, nor a module below a facade;
``test_structure_layers.py`` checks every distribution of the monorepo).
Announcements find their framework's version without importing it:
:func:`distribution_version`, :func:`find_distribution`,
:func:`module_version` (from :mod:`.frameworks`).

Environment variables read when the manager is built:

``COLLIMATE_RL_DISABLE_PLUGIN_AUTOLOAD=1``
    load no installed plugin (built-ins stay).
``COLLIMATE_RL_BLOCK_PLUGINS=name1,name2``
    skip these plugins (entry-point or distribution names).
``COLLIMATE_RL_TRACE_HOOKS=1``
    trace every hook call to stderr.
"""

from __future__ import annotations

from .checks import check_plugin
from .errors import PluginConflictError, PluginContractError, PluginError, PluginLoadError
from .events import ExecEvent, PluginAnnouncement, RewardFactory, Subcommands, TransportFactory
from .frameworks import distribution_version, find_distribution, module_version
from .inventory import PluginInfo, plugin_inventory
from .manager import (
    ENTRY_POINT_GROUP,
    ENV_BLOCK,
    ENV_DISABLE_AUTOLOAD,
    ENV_TRACE,
    get_plugin_manager,
    new_plugin_manager,
    reset_plugin_manager,
)
from .markers import PROJECT_NAME, hookimpl, hookspec
from .registry import (
    Contribution,
    collect_contributions,
    hook_results,
    local_templates,
    reward_kinds,
    transport_factories,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "ENV_BLOCK",
    "ENV_DISABLE_AUTOLOAD",
    "ENV_TRACE",
    "PROJECT_NAME",
    "Contribution",
    "ExecEvent",
    "PluginAnnouncement",
    "PluginConflictError",
    "PluginContractError",
    "PluginError",
    "PluginInfo",
    "PluginLoadError",
    "RewardFactory",
    "Subcommands",
    "TransportFactory",
    "check_plugin",
    "collect_contributions",
    "distribution_version",
    "find_distribution",
    "get_plugin_manager",
    "hook_results",
    "hookimpl",
    "hookspec",
    "local_templates",
    "module_version",
    "new_plugin_manager",
    "plugin_inventory",
    "reset_plugin_manager",
    "reward_kinds",
    "transport_factories",
]
