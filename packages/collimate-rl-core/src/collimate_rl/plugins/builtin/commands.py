"""Core's own ``collimate plugins``, ``version``, ``serve`` and ``doctor``, contributed
through the CLI hook.

They go through ``collimate_rl_cli_commands`` like a plugin's would, so the
hook is exercised by core itself and a plugin's command cannot silently
replace a core one (the CLI rejects a duplicate name, naming both plugins).
The commands of a feature are built-in plugins beside it instead
(``collimate grade``: :mod:`collimate_rl.dataset_grading.builtin_commands`;
``bake`` / ``images`` / ``status``: :mod:`collimate_rl.gateway_flows.builtin_commands`):
this layer imports nothing above it.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
from dataclasses import asdict

from ...__about__ import __version__
from ..events import Subcommands
from ..inventory import PluginInfo, plugin_inventory
from ..markers import hookimpl

#: The module ``collimate serve`` hands its arguments to.
LOCAL_BACKEND_CLI = "collimate_rl.local_backend.cli"
#: The module ``collimate doctor`` hands its arguments to.
DOCTOR = "collimate_rl.local_backend.doctor"


@hookimpl
def collimate_rl_cli_commands(subparsers: Subcommands) -> None:
    plugins = subparsers.add_parser(
        "plugins", help="list the installed plugins and the frameworks they found"
    )
    plugins.add_argument("--json", action="store_true", help="machine-readable output")
    plugins.add_argument(
        "-v", "--verbose", action="store_true", help="also list the hooks each plugin implements"
    )
    plugins.set_defaults(func=run_plugins)

    version = subparsers.add_parser("version", help="print the version of collimate-rl-core")
    version.set_defaults(func=run_version)

    serve = subparsers.add_parser(
        "serve",
        help="run the local backend (daemon and gateway wires); `collimate serve -h` for options",
        add_help=False,  # -h belongs to the backend's own parser
    )
    serve.set_defaults(func=run_serve, passthrough=True)

    doctor = subparsers.add_parser(
        "doctor",
        help="what this host gives the local backend (isolation, quotas, Landlock, languages, "
        "the datasets' test libraries), with the command that adds what is missing",
        add_help=False,
    )
    doctor.set_defaults(func=run_doctor, passthrough=True)


def run_version(args: argparse.Namespace) -> int:
    print(f"collimate-rl-core {__version__} (Python {platform.python_version()})")
    return 0


def _framework_text(info: PluginInfo) -> str:
    parts = []
    for a in info.announcements:
        if a.framework is None:
            continue
        found = a.framework_version if a.framework_version else "not installed"
        parts.append(f"{a.framework} {found}")
    return ", ".join(parts) or "-"


def _order(info: PluginInfo) -> tuple[int, str]:
    # core's built-ins first (in registration order: the sort is stable), then
    # installed plugins by name, then plugins registered in-process
    if info.builtin:
        return 0, ""
    return (1 if info.distribution else 2), info.plugin


def _row(info: PluginInfo) -> tuple[str, str, str, str]:
    if info.announcements:
        name = ", ".join(a.name for a in info.announcements)
        version = ", ".join(a.version for a in info.announcements)
    else:
        name, version = info.plugin, "-"
    if info.error:
        version = f"{version} (announce failed: {info.error})"
    if info.builtin:
        source = f"{info.distribution} {info.distribution_version} (built-in)"
    elif info.distribution:
        source = f"{info.distribution} {info.distribution_version} (entry point {info.plugin!r})"
    else:
        source = "(registered in-process)"
    return name, version, _framework_text(info), source


def run_plugins(args: argparse.Namespace) -> int:
    infos = sorted(plugin_inventory(getattr(args, "plugin_manager", None)), key=_order)
    if args.json:
        payload = [
            {
                "plugin": i.plugin,
                "distribution": i.distribution,
                "distribution_version": i.distribution_version,
                "builtin": i.builtin,
                "announcements": [asdict(a) for a in i.announcements],
                "error": i.error,
                "hooks": list(i.hooks),
            }
            for i in infos
        ]
        print(json.dumps(payload, indent=2))
        return 1 if any(i.error for i in infos) else 0
    header = ("PLUGIN", "VERSION", "FRAMEWORK", "SOURCE")
    rows = [header, *(_row(i) for i in infos)]
    widths = [max(len(r[c]) for r in rows) for c in range(3)]
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r[:3], widths, strict=True)) + "  " + r[3])
    for info in infos:
        for a in info.announcements:
            if a.detail and a.framework is not None:
                print(f"  {a.name}: {a.detail}")
    if getattr(args, "verbose", False):
        print()
        for info in infos:
            print(f"{info.plugin}: {', '.join(info.hooks) or '(no hooks)'}")
    return 1 if any(i.error for i in infos) else 0


def run_doctor(args: argparse.Namespace) -> int:
    doctor = importlib.import_module(DOCTOR)
    return int(doctor.main(list(getattr(args, "extra_argv", []))) or 0)


def run_serve(args: argparse.Namespace) -> int:
    try:
        backend_cli = importlib.import_module(LOCAL_BACKEND_CLI)
    except ModuleNotFoundError as exc:
        if exc.name is None or not LOCAL_BACKEND_CLI.startswith(exc.name):
            raise  # a dependency of the backend is missing: show the real error
        print(
            f"collimate serve: the local backend is not available in this installation "
            f"({LOCAL_BACKEND_CLI} is missing); reinstall collimate-rl-core",
            file=sys.stderr,
        )
        return 2
    return int(backend_cli.main(list(getattr(args, "extra_argv", []))) or 0)
