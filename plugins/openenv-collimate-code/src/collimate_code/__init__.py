"""An OpenEnv code-grading environment graded by collimate-rl.

``AutoEnv.from_env("collimate_code", container_provider=CollimateProvider(...))``
finds it once ``openenv-collimate-code`` is installed. The server
(:mod:`collimate_code.server`) poses problems from dataset rows and grades
submissions with ``reward_spec_from_ground_truth`` + ``grade``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .__about__ import __version__

if TYPE_CHECKING:
    from .client import CollimateCodeAction, CollimateCodeEnv, CollimateCodeObservation

__all__ = ["CollimateCodeAction", "CollimateCodeEnv", "CollimateCodeObservation", "__version__"]


def __getattr__(name: str) -> Any:
    """The client's names, imported on first use: ``python -m
    collimate_code.server`` imports this package before the server's entry
    point runs, and must get there without OpenEnv loaded (see
    :mod:`collimate_code.server.__main__`)."""
    if name in __all__ and name != "__version__":
        return getattr(importlib.import_module(".client", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
