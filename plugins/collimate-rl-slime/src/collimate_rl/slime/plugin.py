"""The collimate-rl plugin of the slime adapter (entry point ``slime``).

slime is not published on PyPI: it is installed from a source checkout, often
only put on ``PYTHONPATH``. So the announcement looks for an importable
``slime`` module (without importing it) rather than for a distribution.
"""

from __future__ import annotations

from collimate_rl.plugins import PluginAnnouncement, hookimpl, module_version

from .__about__ import __version__

#: The top-level module slime installs.
FRAMEWORK_MODULE = "slime"


@hookimpl
def collimate_rl_announce() -> PluginAnnouncement:
    version = module_version(FRAMEWORK_MODULE)
    detail = "" if version else "slime is not importable (it is installed from source)"
    return PluginAnnouncement(
        name="collimate-rl-slime",
        version=__version__,
        framework="slime",
        framework_version=version,
        detail=detail,
    )
