"""``collimate grade``, contributed through the CLI hook like a plugin's command.

A built-in plugin (listed in :data:`collimate_rl.plugins.builtin.BUILTIN_PLUGIN_MODULES`),
beside the feature it registers: the plugin layer never imports it.
"""

from __future__ import annotations

from ..plugins.events import Subcommands
from ..plugins.markers import hookimpl
from .cli import add_grade_command


@hookimpl
def collimate_rl_cli_commands(subparsers: Subcommands) -> None:
    add_grade_command(subparsers)
