"""The core distribution announces itself like any plugin does."""

from __future__ import annotations

from ...__about__ import __version__
from ..events import PluginAnnouncement
from ..markers import hookimpl

CORE_DISTRIBUTION = "collimate-rl-core"


@hookimpl
def collimate_rl_announce() -> PluginAnnouncement:
    return PluginAnnouncement(
        name=CORE_DISTRIBUTION,
        version=__version__,
        detail="clients for the daemon and the gateway, rewards, local backend",
    )
