"""The collimate-rl plugin of the OpenEnv adapter (entry point ``openenv``).

It announces the adapter (``collimate plugins`` lists ``CollimateProvider``),
and contributes the code environment's app template to the local backend
when that environment is installed (see :mod:`.templates`).

OpenEnv is published under two PyPI names that ship the same files:
``openenv`` (the newer, sync + async line) and ``openenv-core`` (the older,
async-only line). The announcement reports whichever is installed, and warns
when both are, because one overwrites the other's files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from collimate_rl.plugins import PluginAnnouncement, find_distribution, hookimpl

from .__about__ import __version__
from .templates import code_env_template

#: The PyPI names of OpenEnv, the preferred one first.
OPENENV_DISTRIBUTIONS = ("openenv", "openenv-core")


@hookimpl
def collimate_rl_announce() -> PluginAnnouncement:
    found = find_distribution(*OPENENV_DISTRIBUTIONS)
    if not found:
        framework_version, detail = None, "install openenv (or openenv-core) to use the adapter"
    else:
        name, framework_version = found[0]
        detail = f"CollimateProvider (collimate_rl.openenv); from the {name!r} distribution"
        if len(found) > 1:
            both = " and ".join(f"{n} {v}" for n, v in found)
            detail += f"; WARNING: {both} are both installed and overwrite each other's files"
    return PluginAnnouncement(
        name="collimate-rl-openenv",
        version=__version__,
        framework="openenv",
        framework_version=framework_version,
        detail=detail,
    )


@hookimpl
def collimate_rl_local_templates() -> Sequence[Mapping[str, Any]]:
    table = code_env_template()
    return [table] if table is not None else []
