"""What a reward call hands back to slime, and how a failed grade is marked.

slime stores whatever the reward function returns in ``sample.reward``: a
float, or (with ``--reward-key``) a dict slime reads one key of.

An infrastructure failure (the backend down, the grader not started) is
never a reward. With ``collimate_on_infra_error=remove`` the sample is
marked instead: ``remove_sample = True`` (slime zeroes its loss mask),
status ``ABORTED`` and ``metadata["collimate_infra_error"]`` (what
:func:`~collimate_rl.slime.drop_infra_groups` looks for). Its returned
reward is a 0.0 placeholder, because slime needs a number for every sample
of a group, and that number still enters the group's advantage
normalisation: hence the filter, which drops the whole group.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any, Final

from collimate_rl import GradeResult

__all__ = ["INFRA_MARK", "Reward", "as_reward", "infra_reward", "is_infra_marked", "mark_infra"]

#: The metadata key an infra failure leaves on its sample (its error text).
INFRA_MARK: Final = "collimate_infra_error"

Reward = float | dict[str, Any]


def _count(detail: dict[str, Any], key: str) -> int | None:
    value = detail.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def as_reward(result: GradeResult, reward_dict: bool, reason: str | None = None) -> Reward:
    """A float, or the dict ``score``/``passed``/``total``/``verdict``/``seed``
    (``passed``/``total``: tests passed and run, when the spec counts them)
    and ``reason`` (why: ``GradeResult.explain()``)."""
    score = float(result.reward)
    if not reward_dict:
        return score
    return {
        "score": score,
        "passed": _count(result.detail, "passed"),
        "total": _count(result.detail, "total"),
        "verdict": result.verdict,
        "seed": result.seed,
        "reason": result.explain() if reason is None else reason,
    }


def infra_reward(seed: str | None, reward_dict: bool, error: str = "") -> Reward:
    """The placeholder of a removed sample (see the module docstring)."""
    if not reward_dict:
        return 0.0
    return {
        "score": 0.0,
        "passed": None,
        "total": None,
        "verdict": "infra_error",
        "seed": seed,
        "reason": f"infra_error: {error or 'no reward could be computed'}",
    }


def _aborted(sample: Any) -> Any:
    """slime's ``Sample.Status.ABORTED``, found on the sample's own class
    (slime is never imported); ``"aborted"`` when the class has no enum."""
    status_enum = getattr(type(sample), "Status", None)
    aborted = getattr(status_enum, "ABORTED", None)
    return aborted if aborted is not None else "aborted"


def mark_infra(sample: Any, error: BaseException | str) -> None:
    """Mark ``sample`` as removed by an infrastructure failure (``error``:
    the exception, or its text)."""
    meta = getattr(sample, "metadata", None)
    if meta is None:
        meta = {}
        sample.metadata = meta
    if not isinstance(meta, MutableMapping):
        raise TypeError(
            f"sample.metadata must be a dict to mark an infra failure, got {type(meta).__name__}"
        )
    text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    meta[INFRA_MARK] = text or "infrastructure failure"
    sample.remove_sample = True
    sample.status = _aborted(sample)


def is_infra_marked(sample: Any) -> bool:
    """Whether :func:`mark_infra` marked ``sample``."""
    meta = getattr(sample, "metadata", None)
    return isinstance(meta, Mapping) and bool(meta.get(INFRA_MARK))
