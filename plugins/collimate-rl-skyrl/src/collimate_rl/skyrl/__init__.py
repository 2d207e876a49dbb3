"""collimate-rl for SkyRL: grade SkyRL rollouts in Collimate sandboxes.

``CollimateCodeEnv`` is a ``skyrl_gym`` text env registered as
``collimate_code`` in every process that imports ``skyrl_gym`` (see
:mod:`.registration`). This distribution ships only the ``collimate_rl.skyrl``
subpackage and plugs into core through the ``collimate_rl`` entry point
(:mod:`.plugin`). Importing it does not import ``skyrl_gym``: the env class
loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .__about__ import __version__
from .registration import ENV_ID, register

if TYPE_CHECKING:
    from .env import CollimateCodeEnv

__all__ = ["ENV_ID", "CollimateCodeEnv", "__version__", "register"]


def __getattr__(name: str) -> Any:
    if name == "CollimateCodeEnv":  # needs skyrl_gym: imported on first use only
        from .env import CollimateCodeEnv

        return CollimateCodeEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
