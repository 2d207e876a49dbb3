"""The collimate-rl plugin of the SkyRL adapter (entry point ``skyrl``).

Loaded whenever core builds its plugin manager, so it imports nothing heavy:
the skyrl-gym version comes from package metadata, not from an import.
"""

from __future__ import annotations

from collimate_rl.plugins import PluginAnnouncement, distribution_version, hookimpl

from .__about__ import __version__

#: The PyPI distribution of the framework this plugin adapts.
FRAMEWORK = "skyrl-gym"


@hookimpl
def collimate_rl_announce() -> PluginAnnouncement:
    return PluginAnnouncement(
        name="collimate-rl-skyrl",
        version=__version__,
        framework=FRAMEWORK,
        framework_version=distribution_version(FRAMEWORK),
    )
