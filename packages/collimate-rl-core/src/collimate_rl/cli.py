"""The ``collimate`` command: core's subcommands plus those plugins contribute.

Every subcommand, core's included, is added through the
``collimate_rl_cli_commands`` hook; each sets ``func(args) -> int`` as its
parser default. A subcommand that forwards its arguments to another parser
(``collimate serve ...``) also sets ``passthrough=True`` and finds the
unparsed arguments in ``args.extra_argv``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import pluggy

from .__about__ import __version__
from .plugins.errors import PluginConflictError, PluginError
from .plugins.manager import get_plugin_manager
from .plugins.registry import each_plugin

__all__ = ["build_parser", "main"]


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


def main(argv: Sequence[str] | None = None, *, pm: pluggy.PluginManager | None = None) -> int:
    """Run ``collimate``; returns the exit code (the console script exits with it).

    ``pm`` defaults to the process-wide plugin manager.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser(pm)
    except PluginError as exc:
        print(f"collimate: {exc}", file=sys.stderr)
        return 2
    args, extra = parser.parse_known_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    if extra and not getattr(args, "passthrough", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.extra_argv = extra
    args.plugin_manager = pm
    return int(func(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
