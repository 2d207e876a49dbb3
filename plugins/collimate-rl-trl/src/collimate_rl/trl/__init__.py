"""collimate-rl for TRL: a reward function graded in Collimate sandboxes.

::

    from collimate_rl.trl import CollimateReward

    trainer = GRPOTrainer(model=..., reward_funcs=[CollimateReward("ground_truth")], ...)

This distribution ships only the ``collimate_rl.trl`` subpackage and never
imports TRL, torch or transformers.
"""

from __future__ import annotations

from .__about__ import __version__
from .completions import completion_text
from .reward import CollimateReward

__all__ = ["CollimateReward", "__version__", "completion_text"]
