"""``collimate demo``, ``burst``, ``rl``, ``launch``, ``fleet`` and ``top``,
contributed through the CLI hook like a plugin's commands.

A built-in plugin (listed in :data:`collimate_rl.plugins.builtin.BUILTIN_PLUGIN_MODULES`),
beside the views it registers. Building the parser imports only the views'
argparse glue; Rich and the backend are imported when a view runs.
"""

from __future__ import annotations

from ..plugins.events import Subcommands
from ..plugins.markers import hookimpl
from .burst import add_burst_command
from .demo import add_demo_command
from .fleet import add_fleet_command
from .launch import add_launch_command
from .rl import add_rl_command
from .top import add_top_command


@hookimpl
def collimate_rl_cli_commands(subparsers: Subcommands) -> None:
    add_demo_command(subparsers)
    add_burst_command(subparsers)
    add_rl_command(subparsers)
    add_launch_command(subparsers)
    add_fleet_command(subparsers)
    add_top_command(subparsers)
