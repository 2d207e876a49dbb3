"""collimate-rl for TRL: a reward function graded in Collimate sandboxes,
and a Python tool for its agent training.

::

    from collimate_rl.trl import CodeEnvironment, CollimateReward, python

    trainer = GRPOTrainer(model=..., reward_funcs=[CollimateReward("ground_truth")], ...)
    trainer = GRPOTrainer(model=..., environment_factory=CodeEnvironment, ...)
    trainer = GRPOTrainer(model=..., reward_funcs=[...], tools=[python], ...)

This distribution ships only the ``collimate_rl.trl`` subpackage and never
imports TRL, torch or transformers.
"""

from __future__ import annotations

from .__about__ import __version__
from .completions import completion_text
from .environment import CodeEnvironment, PythonEnvironment
from .reward import CollimateReward
from .tools import python, python_tool

__all__ = [
    "CodeEnvironment",
    "CollimateReward",
    "PythonEnvironment",
    "__version__",
    "completion_text",
    "python",
    "python_tool",
]
