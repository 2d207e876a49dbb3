"""Episode metrics of ``collimate_code`` and their aggregate over a step.

SkyRL calls ``env.get_metrics()`` once an episode is done and then
``aggregate_metrics`` of the env class over every episode of the class in
the step (logged as ``environment/<key>``). An episode reports:

* ``reward``: the last turn's reward; ``passed``: 1.0 if the last turn
  passed every test;
* ``turns``: attempts graded;
* ``infra_error``: 1.0 if the backend failed to grade (only with
  ``on_infra_error: zero``; with ``raise`` the step raised instead);
* ``grade_ms``: wall time spent grading, all turns together;
* ``packed``: graded turns that were sent in a pack (coalesced).

The aggregate gives ``pass_rate``, ``mean_reward``, ``infra_errors`` (a
count) and ``infra_error_rate``, ``mean_turns``, ``grade_ms_mean`` and
``grade_ms_max``, ``packed_rate`` and ``episodes``. Infra-failed episodes
stay out of ``pass_rate`` and ``mean_reward``: their 0.0 is not a result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["EpisodeStats", "aggregate"]


@dataclass
class EpisodeStats:
    """What one env counts while its episode runs."""

    turns: int = 0
    reward: float = 0.0
    passed: bool = False
    infra_error: bool = False
    grade_ms: float = 0.0
    packed: int = 0

    def as_metrics(self) -> dict[str, Any]:
        return {
            "reward": self.reward,
            "passed": 1.0 if self.passed else 0.0,
            "turns": float(self.turns),
            "infra_error": 1.0 if self.infra_error else 0.0,
            "grade_ms": self.grade_ms,
            "packed": float(self.packed),
        }


def _num(m: dict[str, Any], key: str) -> float:
    value = m.get(key, 0.0)
    return float(value) if isinstance(value, (int, float)) else 0.0


def aggregate(metrics: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The step's figures from its episodes' ``get_metrics()`` (see the module doc)."""
    episodes = [m for m in metrics if m]
    if not episodes:
        return {}
    graded = [m for m in episodes if not _num(m, "infra_error")]
    infra = len(episodes) - len(graded)
    turns = sum(_num(m, "turns") for m in episodes)
    grade_ms = [_num(m, "grade_ms") for m in episodes]
    out: dict[str, Any] = {
        "episodes": float(len(episodes)),
        "infra_errors": float(infra),
        "infra_error_rate": infra / len(episodes),
        "mean_turns": turns / len(episodes),
        "grade_ms_mean": sum(grade_ms) / len(grade_ms),
        "grade_ms_max": max(grade_ms),
        "packed_rate": (sum(_num(m, "packed") for m in episodes) / turns) if turns else 0.0,
    }
    if graded:
        out["pass_rate"] = sum(_num(m, "passed") for m in graded) / len(graded)
        out["mean_reward"] = sum(_num(m, "reward") for m in graded) / len(graded)
    return out
