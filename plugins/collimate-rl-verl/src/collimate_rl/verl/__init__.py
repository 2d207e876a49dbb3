"""collimate-rl for verl: ``compute_score`` graded in Collimate sandboxes.

In the trainer config::

    reward.custom_reward_function.path=pkg://collimate_rl.verl
    reward.custom_reward_function.name=compute_score        # or compute_score_async

This distribution ships only the ``collimate_rl.verl`` subpackage and never
imports verl, torch or ray. Its imports are absolute, so verl can also load
this file by its path.
"""

from __future__ import annotations

from collimate_rl.verl.__about__ import __version__
from collimate_rl.verl.score import (
    compute_score,
    compute_score_async,
    compute_score_batch,
    score_dict,
)

__all__ = [
    "__version__",
    "compute_score",
    "compute_score_async",
    "compute_score_batch",
    "score_dict",
]
