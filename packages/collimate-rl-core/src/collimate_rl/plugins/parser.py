"""The ``collimate`` parser: every subcommand added through the
``collimate_rl_cli_commands`` hook, a name two plugins both claim refused.

Here, in the hooks layer, so that checking a plugin (:mod:`.checks`) can
build the parser it contributes to without importing :mod:`collimate_rl.cli`
(the console script, which imports this package); ``collimate_rl.cli``
re-exports :func:`build_parser`.
"""

from __future__ import annotations

import argparse
from typing import Any

import pluggy

from ..__about__ import __version__
from .errors import PluginConflictError
from .manager import get_plugin_manager
from .registry import each_plugin

__all__ = ["build_parser"]


class _GuardedSubParsers(argparse._SubParsersAction):  # type: ignore[type-arg]
    """Refuses a subcommand name (or alias) that another plugin already added.

    argparse either raises a bare error (3.11+) or silently replaces the
    first parser (3.10); neither says which plugins collided.
    """

    current_plugin = "?"
    owners: dict[str, str]

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        owners = self.__dict__.setdefault("owners", {})
        for n in (name, *kwargs.get("aliases", ())):
            if n in owners:
                raise PluginConflictError("CLI command", n, owners[n], self.current_plugin)
        for n in (name, *kwargs.get("aliases", ())):
            owners[n] = self.current_plugin
        parser: argparse.ArgumentParser = super().add_parser(name, **kwargs)
        return parser


def build_parser(pm: pluggy.PluginManager | None = None) -> argparse.ArgumentParser:
    """The full ``collimate`` parser, with every plugin's subcommands."""
    pm = get_plugin_manager() if pm is None else pm
    parser = argparse.ArgumentParser(
        prog="collimate",
        description="collimate-rl: sandboxed reward grading for RL post-training.",
    )
    parser.add_argument("--version", action="version", version=f"collimate-rl-core {__version__}")
    subparsers = parser.add_subparsers(
        title="commands", dest="command", metavar="COMMAND", action=_GuardedSubParsers
    )
    assert isinstance(subparsers, _GuardedSubParsers)
    for plugin, contribute in each_plugin(pm, "collimate_rl_cli_commands"):
        subparsers.current_plugin = plugin
        contribute(subparsers=subparsers)
    return parser
