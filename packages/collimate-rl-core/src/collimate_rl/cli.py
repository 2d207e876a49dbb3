"""The ``collimate`` command: core's subcommands plus those plugins contribute.

Every subcommand, core's included, is added through the
``collimate_rl_cli_commands`` hook; each sets ``func(args) -> int`` as its
parser default. A subcommand that forwards its arguments to another parser
(``collimate serve ...``) also sets ``passthrough=True`` and finds the
unparsed arguments in ``args.extra_argv``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import pluggy

from .plugins.errors import PluginError
from .plugins.parser import build_parser

__all__ = ["build_parser", "main"]


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
