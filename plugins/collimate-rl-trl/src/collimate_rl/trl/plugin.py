"""The collimate-rl plugin of the trl adapter (entry point ``trl``).

Loaded whenever core builds its plugin manager, so it imports nothing heavy:
the trl version comes from package metadata, never from an import (importing
trl pulls torch and transformers).
"""

from __future__ import annotations

from collimate_rl.plugins import PluginAnnouncement, distribution_version, hookimpl

from .__about__ import __version__

#: The PyPI distribution of the framework this plugin adapts.
FRAMEWORK = "trl"

#: What the plugin gives TRL, all importable from ``collimate_rl.trl``.
PROVIDES = (
    "reward_funcs: CollimateReward; environment_factory: CodeEnvironment, "
    "PythonEnvironment; tools: python"
)


@hookimpl
def collimate_rl_announce() -> PluginAnnouncement:
    return PluginAnnouncement(
        name="collimate-rl-trl",
        version=__version__,
        framework=FRAMEWORK,
        framework_version=distribution_version(FRAMEWORK),
        detail=PROVIDES,
    )
