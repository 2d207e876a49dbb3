"""collimate-rl for slime: Collimate-graded custom reward hooks.

slime loads custom reward functions by dotted path::

    --custom-rm-path collimate_rl.slime.reward_func              # per sample
    --group-rm --custom-rm-path collimate_rl.slime.group_reward_func
    --dynamic-sampling-filter-path collimate_rl.slime.drop_infra_groups

Settings come from slime's ``args`` (``--custom-config-path``), then from
``COLLIMATE_*`` environment variables (:mod:`.config`). This distribution
ships only the ``collimate_rl.slime`` subpackage and never imports slime:
it reads slime's ``Sample`` by its attributes.
"""

from __future__ import annotations

from .__about__ import __version__
from .clients import aclose_clients
from .config import SlimeConfig, resolve_config
from .filters import FilterVerdict, drop_infra_groups
from .outcome import INFRA_MARK
from .rewards import group_reward_func, reward_func

__all__ = [
    "INFRA_MARK",
    "FilterVerdict",
    "SlimeConfig",
    "__version__",
    "aclose_clients",
    "drop_infra_groups",
    "group_reward_func",
    "resolve_config",
    "reward_func",
]
