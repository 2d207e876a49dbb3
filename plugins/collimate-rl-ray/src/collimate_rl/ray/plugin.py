"""The collimate-rl plugin of Ray (entry point ``ray``): the graders found
by ``connect()`` inside a Ray job, and ``collimate ray up | status | down``.

Importing this module never imports Ray (``collimate plugins`` and every
``connect()`` load it): the hooks import what they need when called.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from collimate_rl.plugins import PluginAnnouncement, Subcommands, hookimpl, module_version

from .__about__ import __version__


@hookimpl
def collimate_rl_announce() -> PluginAnnouncement:
    version = module_version("ray")
    return PluginAnnouncement(
        name="collimate-rl-ray",
        version=__version__,
        framework="ray",
        framework_version=version,
        detail="" if version else "ray is not installed",
    )


@hookimpl
def collimate_rl_cluster_client(
    asynchronous: bool, required: bool, options: Mapping[str, Any]
) -> Any:
    from .discovery import cluster_client

    return cluster_client(asynchronous, required, options)


@hookimpl
def collimate_rl_cli_commands(subparsers: Subcommands) -> None:
    from .cli import add_ray_command

    add_ray_command(subparsers)
