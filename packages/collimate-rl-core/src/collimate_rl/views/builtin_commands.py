"""``collimate demo``, ``burst``, ``rl``, ``launch``, ``fleet`` and ``top``,
contributed through the CLI hook like a plugin's commands.

A built-in plugin (listed in :data:`collimate_rl.plugins.builtin.BUILTIN_PLUGIN_MODULES`),
beside the views it registers. Building the parser imports only the views'
argparse glue; Rich and the backend are imported when a view runs.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable

from ..plugins.events import EXIT_INTERRUPTED, Subcommands
from ..plugins.markers import hookimpl
from .burst import add_burst_command
from .demo import add_demo_command
from .fleet import add_fleet_command
from .launch import add_launch_command
from .rl import add_rl_command
from .top import add_top_command


def _quiet_on_ctrl_c(run: Callable[[argparse.Namespace], int]) -> Callable[..., int]:
    """``run``, exiting 130 without a traceback on a Ctrl-C it did not catch
    itself (while the embedded backend starts, say: its ``with`` block has
    stopped it by then)."""

    @functools.wraps(run)
    def guarded(args: argparse.Namespace) -> int:
        try:
            return run(args)
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED

    return guarded


@hookimpl
def collimate_rl_cli_commands(subparsers: Subcommands) -> None:
    for add in (
        add_demo_command,
        add_burst_command,
        add_rl_command,
        add_launch_command,
        add_fleet_command,
        add_top_command,
    ):
        parser = add(subparsers)
        parser.set_defaults(func=_quiet_on_ctrl_c(parser.get_default("func")))
