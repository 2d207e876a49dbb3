"""What a grade produces (``GradeResult``) and the failure semantics every
path shares.

The rule: **an infrastructure failure is never a reward.** A backend error
(or a grader that never started, or a candidate that arrived altered) is
re-raised by default (``on_infra_error="raise"``) so the trainer resamples
the group; ``"zero"`` keeps positional alignment and flags the slot
(``infra_error=True``, ``verdict="infra_error"``); ``"skip"`` drops it. A
candidate that crashes, loops, prints garbage or writes to stderr is a
*task* outcome: its reward comes from the verdict and ``infra_error``
stays False.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

from ..errors import CollimateError
from ..seeds import check_seed

__all__ = [
    "INFRA_ERROR_MODES",
    "GradeResult",
    "GraderInfraError",
    "OnInfraError",
    "Graded",
    "after_grade",
    "as_outcome",
    "check_seed",
    "check_timeout",
    "float_or_none",
    "infra_result",
]

OnInfraError = Literal["raise", "zero", "skip"]
INFRA_ERROR_MODES: Final = ("raise", "zero", "skip")


@dataclass
class GradeResult:
    """The reward of one candidate and how it was obtained.

    ``verdict`` is three-way: ``"passed"`` (full reward), ``"failed"`` (a
    task outcome, possibly with partial reward) or ``"infra_error"`` (no
    reward could be computed: do not train on it). ``detail`` carries the
    grader's per-test report (``passed``, ``total``, ``failed_indices``, the
    first ``failed`` entries with ``index``/``reason``/``message``, ``timeout``,
    ``memory_error``, ``load_error``) when the spec provides one. ``index`` is the candidate's
    position in its batch (useful with ``on_infra_error="skip"``). A result
    graded in a pack says so in ``raw["pack"]`` (its nonce and size).
    """

    reward: float
    seed: str | None = None
    seed_ack: str | None = None
    exit_code: int | None = None
    fork_time_ms: float | None = None
    exec_time_ms: float | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    infra_error: bool = False
    verdict: str = ""
    detail: dict[str, Any] = field(default_factory=dict)
    index: int | None = None
    error: str | None = None

    def __post_init__(self) -> None:
        if not self.verdict:
            if self.infra_error:
                self.verdict = "infra_error"
            else:
                self.verdict = "passed" if self.reward >= 1.0 else "failed"

    @property
    def passed(self) -> bool:
        return self.verdict == "passed"

    def explain(self) -> str:
        """Why the reward is what it is, in one line for a framework's log:
        the verdict, the tests passed, and the first failing test with its
        reason and message (or why no test ran, or the infra error)."""
        if self.infra_error:
            return f"infra_error: {self.error or 'no reward could be computed'}"
        parts = [f"{self.verdict} {self.reward:.3g}"]
        passed, total = self.detail.get("passed"), self.detail.get("total")
        if isinstance(passed, int) and isinstance(total, int):
            parts.append(f"{passed}/{total} tests passed")
        load_error = self.detail.get("load_error")
        if load_error:
            parts.append(f"did not load: {str(load_error)[:200]}")
        failed = self.detail.get("failed")
        if isinstance(failed, list) and failed and isinstance(failed[0], dict):
            first = failed[0]
            message = str(first.get("message") or "")[:200]
            statement = first.get("statement")  # a bare assert's source (detail only)
            if statement and message.rstrip(": ") in ("", "AssertionError"):
                message = f"AssertionError: {str(statement)[:200]}"
            parts.append(
                f"first failure: test {first.get('index')} {first.get('reason')}"
                + (f": {message}" if message else "")
            )
        elif self.error and not self.passed:
            parts.append(self.error[:200])
        elif not load_error and self.detail.get("message"):
            # no verdict was written: the guest's exec says why (the
            # candidate ended its grader, or the exec ran out of time)
            parts.append(str(self.detail["message"])[:200])
        return "; ".join(parts)


#: What grading one candidate ends in: its result, or the error a lone
#: grade would raise (the callers decide whether to raise, zero or skip it).
Graded = GradeResult | BaseException


class GraderInfraError(CollimateError):
    """The exec answered, but no reward could be computed for reasons that
    are not the candidate's (the grader never started, the candidate arrived
    altered, the spec's reference/generator is broken). ``result`` is the
    flagged GradeResult, with the guest's answer in ``raw``."""

    def __init__(self, message: str, result: GradeResult | None = None) -> None:
        super().__init__(message, None, "grader_infra_error")
        self.result = result


def as_outcome(result: GradeResult) -> Graded:
    """A lone grade's outcome: its result, or the error its flagged result is."""
    if result.infra_error:
        return GraderInfraError(result.error or "grading failed for infrastructure reasons", result)
    return result


def infra_result(error: BaseException, seed: str | None, index: int) -> GradeResult:
    """The placeholder of a slot whose grade failed for infrastructure
    reasons (``on_infra_error="zero"``): reward 0.0, loudly flagged."""
    return GradeResult(
        reward=0.0,
        seed=seed,
        infra_error=True,
        verdict="infra_error",
        index=index,
        error=f"{type(error).__name__}: {error}",
    )


def after_grade(result: GradeResult, candidate: str, index: int) -> None:
    """Tell the ``collimate_rl_after_grade`` observers (on the caller's thread)."""
    from ..plugins.manager import get_plugin_manager

    hook = get_plugin_manager().hook.collimate_rl_after_grade
    if hook.get_hookimpls():
        hook(result=result, candidate=candidate, index=index)


def check_timeout(timeout_seconds: float) -> None:
    if isinstance(timeout_seconds, bool) or not timeout_seconds > 0:
        raise ValueError(f"timeout_seconds must be positive, got {timeout_seconds!r}")


def float_or_none(value: Any) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None
