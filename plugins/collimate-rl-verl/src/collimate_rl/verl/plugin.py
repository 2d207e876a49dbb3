"""The collimate-rl plugin of the verl adapter (entry point ``verl``).

Loaded whenever core builds its plugin manager, so it imports nothing heavy:
the verl version comes from package metadata, never from an import (importing
verl pulls torch and ray).
"""

from __future__ import annotations

from collimate_rl.plugins import PluginAnnouncement, distribution_version, hookimpl

from .__about__ import __version__

#: The PyPI distribution of the framework this plugin adapts.
FRAMEWORK = "verl"


@hookimpl
def collimate_rl_announce() -> PluginAnnouncement:
    return PluginAnnouncement(
        name="collimate-rl-verl",
        version=__version__,
        framework=FRAMEWORK,
        framework_version=distribution_version(FRAMEWORK),
    )
