"""An OpenEnv code-grading environment graded by collimate-rl.

``AutoEnv.from_env("collimate_code", container_provider=CollimateProvider(...))``
finds it once ``openenv-collimate-code`` is installed. The server
(:mod:`collimate_code.server`) poses problems from dataset rows and grades
submissions with ``reward_spec_from_ground_truth`` + ``grade``.
"""

from __future__ import annotations

from .__about__ import __version__
from .client import CollimateCodeAction, CollimateCodeEnv, CollimateCodeObservation

__all__ = ["CollimateCodeAction", "CollimateCodeEnv", "CollimateCodeObservation", "__version__"]
