"""collimate-rl for verl: ``compute_score`` graded in Collimate sandboxes.

In the trainer config::

    reward.custom_reward_function.path=pkg://collimate_rl.verl
    reward.custom_reward_function.name=compute_score        # or compute_score_async

The Python tool of verl's multi-turn agent loop, registered by the YAML
file this package ships (no code of yours)::

    actor_rollout_ref.rollout.multi_turn.tool_config_path=<collimate_rl.verl.TOOL_CONFIG>

names ``collimate_rl.verl.tools.CollimatePythonTool``. This package never
imports verl, torch or ray (only ``collimate_rl.verl.tools``, which verl
loads, imports verl's tool classes). Its imports are absolute, so verl can
also load this file by its path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from collimate_rl.verl.__about__ import __version__
from collimate_rl.verl.score import (
    compute_score,
    compute_score_async,
    compute_score_batch,
    score_dict,
)
from collimate_rl.verl.trajectories import INFRA_ERROR_KEY

#: verl's tool config for :class:`collimate_rl.verl.tools.CollimatePythonTool`
#: (``actor_rollout_ref.rollout.multi_turn.tool_config_path``).
TOOL_CONFIG: Final = Path(__file__).with_name("python_tool.yaml")

__all__ = [
    "INFRA_ERROR_KEY",
    "TOOL_CONFIG",
    "__version__",
    "compute_score",
    "compute_score_async",
    "compute_score_batch",
    "score_dict",
]
