"""``collimate bake``, ``images`` and ``status``, contributed through the CLI
hook like a plugin's commands.

A built-in plugin (listed in :data:`collimate_rl.plugins.builtin.BUILTIN_PLUGIN_MODULES`),
beside the feature it registers: the plugin layer never imports it.
"""

from __future__ import annotations

from ..plugins.events import Subcommands
from ..plugins.markers import hookimpl
from .cli import add_gateway_commands


@hookimpl
def collimate_rl_cli_commands(subparsers: Subcommands) -> None:
    add_gateway_commands(subparsers)
