"""Episode metrics of ``collimate_code`` and their aggregate over a step.

SkyRL calls ``env.get_metrics()`` once an episode is done and then
``aggregate_metrics`` of the env class over every episode of the class in
the step (logged as ``environment/<key>``). An episode reports:

* ``reward``: the last turn's reward; ``passed``: 1.0 if the last turn
  passed every test;
* ``turns``: turns taken: answers graded and, with ``tools``, tool calls;
* ``infra_error``: 1.0 if the backend failed to grade (only with
  ``on_infra_error: zero``; with ``raise`` the step raised instead);
* ``grade_ms``: wall time spent grading, all turns together;
* ``packed``: graded turns that were sent in a pack (coalesced);
* ``tool_calls``: turns spent on a tool call (with ``tools``; a malformed
  or unknown call included, since the model spent the turn on it);
  ``tool_ms``: wall time in tool calls, all turns together;
* ``verdict_<verdict>``: 1.0 for the last turn's verdict (``passed``,
  ``failed``, ``infra_error``), and for a failed one ``failed_<why>``: 1.0
  for why (:func:`failure_of`: ``no_code``, ``load_error``, ``timeout``,
  ``memory_error``, or the first failing test's reason, e.g.
  ``wrong_answer``, ``exception``);
* ``reason``: the last turn's ``GradeResult.explain()`` (a string: the
  aggregate leaves it out; it is there for a custom generator or a dump).

The aggregate gives ``pass_rate``, ``mean_reward``, ``infra_errors`` (a
count) and ``infra_error_rate``, ``mean_turns``, ``grade_ms_mean`` and
``grade_ms_max``, ``packed_rate`` (of graded turns), ``mean_tool_calls``,
``tool_ms_mean`` and ``episodes``, and the counts of every
``verdict_*`` and ``failed_*`` key: why the step's rewards are what they
are, in SkyRL's own metrics. Infra-failed episodes stay out of
``pass_rate`` and ``mean_reward``: their 0.0 is not a result.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from collimate_rl import GradeResult

__all__ = ["COUNTED_PREFIXES", "EpisodeStats", "aggregate", "failure_of"]

#: The one-hot keys of an episode that the aggregate counts.
COUNTED_PREFIXES: Final = ("verdict_", "failed_")


def _key(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "other"


def failure_of(result: GradeResult, code_found: bool = True) -> str:
    """Why a graded turn failed, as one metric-safe word: ``no_code``,
    ``load_error``, ``timeout``, ``memory_error``, the first failing test's
    reason (``wrong_answer``, ``exception``, ...), else ``failed``; ``""``
    for a pass."""
    if result.passed:
        return ""
    if not code_found:
        return "no_code"
    detail = result.detail
    if detail.get("timeout"):
        return "timeout"
    if detail.get("memory_error"):
        return "memory_error"
    if detail.get("load_error"):
        return "load_error"
    failed = detail.get("failed")
    if isinstance(failed, list) and failed and isinstance(failed[0], dict):
        reason = failed[0].get("reason")
        if isinstance(reason, str) and reason:
            return _key(reason)
    return "failed"


@dataclass
class EpisodeStats:
    """What one env counts while its episode runs."""

    turns: int = 0
    reward: float = 0.0
    passed: bool = False
    infra_error: bool = False
    grade_ms: float = 0.0
    packed: int = 0
    verdict: str = ""  #: the last turn's
    failure: str = ""  #: :func:`failure_of` the last turn
    reason: str = ""  #: ``GradeResult.explain()`` of the last turn
    tool_calls: int = 0  #: turns spent on a tool call (``tools``)
    tool_ms: float = 0.0  #: wall time in tool calls, all turns together

    def as_metrics(self) -> dict[str, Any]:
        metrics: dict[str, Any] = {
            "reward": self.reward,
            "passed": 1.0 if self.passed else 0.0,
            "turns": float(self.turns),
            "infra_error": 1.0 if self.infra_error else 0.0,
            "grade_ms": self.grade_ms,
            "packed": float(self.packed),
            "tool_calls": float(self.tool_calls),
            "tool_ms": self.tool_ms,
        }
        if self.verdict:
            metrics[f"verdict_{_key(self.verdict)}"] = 1.0
        if self.failure:
            metrics[f"failed_{self.failure}"] = 1.0
        if self.reason:
            metrics["reason"] = self.reason
        return metrics


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
    tool_calls = sum(_num(m, "tool_calls") for m in episodes)
    graded_turns = turns - tool_calls
    grade_ms = [_num(m, "grade_ms") for m in episodes]
    out: dict[str, Any] = {
        "episodes": float(len(episodes)),
        "infra_errors": float(infra),
        "infra_error_rate": infra / len(episodes),
        "mean_turns": turns / len(episodes),
        "grade_ms_mean": sum(grade_ms) / len(grade_ms),
        "grade_ms_max": max(grade_ms),
        "packed_rate": (
            sum(_num(m, "packed") for m in episodes) / graded_turns if graded_turns else 0.0
        ),
        "mean_tool_calls": tool_calls / len(episodes),
        "tool_ms_mean": sum(_num(m, "tool_ms") for m in episodes) / len(episodes),
    }
    for m in episodes:
        for key in m:
            if key.startswith(COUNTED_PREFIXES):
                out[key] = out.get(key, 0.0) + _num(m, key)
    if graded:
        out["pass_rate"] = sum(_num(m, "passed") for m in graded) / len(graded)
        out["mean_reward"] = sum(_num(m, "reward") for m in graded) / len(graded)
    return out
