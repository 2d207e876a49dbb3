"""The collimate-rl plugin of the OpenEnv adapter (entry point ``openenv``).

OpenEnv is published under two PyPI names that ship the same files:
``openenv`` (the newer, sync + async line) and ``openenv-core`` (the older,
async-only line). The announcement reports whichever is installed, and warns
when both are, because one overwrites the other's files.
"""

from __future__ import annotations

from collimate_rl.plugins import PluginAnnouncement, hookimpl
from collimate_rl.plugins.frameworks import find_distribution

from .__about__ import __version__

#: The PyPI names of OpenEnv, the preferred one first.
OPENENV_DISTRIBUTIONS = ("openenv", "openenv-core")


@hookimpl
def collimate_rl_announce() -> PluginAnnouncement:
    found = find_distribution(*OPENENV_DISTRIBUTIONS)
    if not found:
        framework_version, detail = None, "install openenv (or openenv-core) to use the adapter"
    else:
        name, framework_version = found[0]
        detail = f"from the {name!r} distribution"
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
