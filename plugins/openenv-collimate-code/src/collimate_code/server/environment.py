"""The code environment: ``reset`` poses a problem, ``step`` grades a submission.

A session's problem comes from ``reset(row=...)`` (a dataset row the trainer
sends), ``reset(index=i)`` (the server's i-th problem) or ``reset(seed=s)``
(one drawn by the seed); without any, the server's problems in turn. The
ground truth stays here; the policy sees the prompt and, after a submission,
the reward, which tests passed and why (``reason``: ``GradeResult.explain()``),
never a grader message that quotes the ground truth
(:mod:`collimate_rl.pipeline.redact`).
``step`` grades through collimate-rl in a sandbox: an infrastructure failure
raises (the client gets an error, never a 0.0), a wrong program is a reward.
The program is the code the submission holds, or, for a problem whose prompt
is code the submission continues (HumanEval), prompt + submission
(``$COLLIMATE_CODE_JOIN_PROMPT=0``: the submission alone).
"""

from __future__ import annotations

import itertools
import random
import threading
import uuid
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import State

from collimate_rl import GradeResult, grade
from collimate_rl.grading import sealed_result

from ..models import CollimateCodeAction, CollimateCodeObservation
from ..problems import Problem, join_prompt, load_problems, problem_from_row
from .grader import grader_client, grader_template, grader_timeout

__all__ = ["CollimateCodeEnvironment", "feedback_from"]

_problems: list[Problem] | None = None
_problems_lock = threading.Lock()
_turn = itertools.count()


def _server_problems() -> list[Problem]:
    global _problems
    with _problems_lock:
        if _problems is None:
            _problems = load_problems()
        return _problems


class CollimateCodeEnvironment(Environment):  # type: ignore[misc]
    """One session's episode. Sessions share nothing but the process's
    problems and grading client, so they run concurrently."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id=None, step_count=0)
        self._problem: Problem | None = None
        self._attempts_left = 0

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        row: dict[str, Any] | None = None,
        index: int | None = None,
        max_attempts: int = 1,
        **kwargs: Any,
    ) -> CollimateCodeObservation:
        if kwargs:
            raise ValueError(
                f"reset: unknown argument(s) {sorted(kwargs)}; known: seed, episode_id, row, "
                "index, max_attempts"
            )
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise ValueError(
                f"reset: max_attempts must be a positive integer, got {max_attempts!r}"
            )
        if row is not None:
            problem = problem_from_row(row, default_id="row")
        else:
            problems = _server_problems()
            if index is not None:
                if isinstance(index, bool) or not isinstance(index, int):
                    raise ValueError(f"reset: index must be an integer, got {index!r}")
                problem = problems[index % len(problems)]
            elif seed is not None:
                problem = random.Random(seed).choice(problems)
            else:
                problem = problems[next(_turn) % len(problems)]
        self._problem = problem
        self._attempts_left = max_attempts
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        return CollimateCodeObservation(
            problem_id=problem.problem_id,
            prompt=problem.prompt,
            attempts_left=max_attempts,
            done=False,
            reward=None,
        )

    def step(
        self, action: CollimateCodeAction, timeout_s: float | None = None, **kwargs: Any
    ) -> CollimateCodeObservation:
        problem = self._problem
        if problem is None or self._attempts_left <= 0:
            raise RuntimeError("no problem is posed: call reset() first (the episode is over)")
        code = problem.program(action.code, join=join_prompt())
        timeout = _timeout(timeout_s)
        result = grade(
            grader_client(), grader_template(), code, problem.spec, timeout_seconds=timeout
        )
        self._attempts_left -= 1
        self._state.step_count += 1
        shown = sealed_result(result, problem.sealed())  # the policy reads it: no test text
        passed, total, tests = feedback_from(shown)
        done = result.passed or self._attempts_left == 0
        return CollimateCodeObservation(
            problem_id=problem.problem_id,
            prompt=problem.prompt,
            attempts_left=self._attempts_left,
            verdict=result.verdict,
            passed=passed,
            total=total,
            tests=tests,
            reason=shown.explain(),
            done=done,
            reward=float(result.reward),
        )

    @property
    def state(self) -> State:
        return self._state


def _timeout(timeout_s: float | None) -> int:
    """The grade's timeout: the server's, shortened by a step's own."""
    limit = grader_timeout()
    if timeout_s is not None and timeout_s > 0:
        limit = max(1, min(limit, int(timeout_s)))
    return limit


def feedback_from(result: GradeResult) -> tuple[int, int, list[dict[str, Any]]]:
    """``(passed, total, tests)`` from the grader's per-test report: one
    entry per test, ``{"index", "passed"}`` plus ``reason`` and ``message``
    for the failures the grader described."""
    detail = result.detail or {}
    total = int(detail.get("total") or 0)
    passed = int(detail.get("passed") or 0)
    failed_at = {int(i) for i in detail.get("failed_indices") or ()}
    described = {int(f["index"]): f for f in detail.get("failed") or () if "index" in f}
    tests: list[dict[str, Any]] = []
    for i in range(total):
        entry: dict[str, Any] = {"index": i, "passed": i not in failed_at}
        if i in described:
            entry["reason"] = str(described[i].get("reason", ""))
            entry["message"] = str(described[i].get("message", ""))
        tests.append(entry)
    return passed, total, tests
