"""The action and observation of the code environment (OpenEnv pydantic models).

The observation carries everything a policy may see: the problem's prompt,
and after a submission its reward and per-test feedback. The ground truth
stays on the server. Feedback lives in the observation's own fields because
the older OpenEnv line does not put ``metadata`` on the wire.
"""

from __future__ import annotations

from typing import Any

from openenv.core.env_server.types import Action, Observation


class CollimateCodeAction(Action):  # type: ignore[misc]
    """A submission: Python code, or a completion with the code in a fenced
    block (the last block defining the entry point wins)."""

    code: str  # the candidate's code, or a completion holding it


class CollimateCodeObservation(Observation):  # type: ignore[misc]
    """A problem (after ``reset``) or a graded submission (after ``step``):
    the row's id and prompt, the submissions still allowed, and for the last
    submission its verdict (``passed``/``failed``; ``""`` before one), the
    tests passed of the total, per test ``index``, ``passed`` and, for a
    failure the grader described, ``reason`` and ``message``, and ``reason``:
    why the reward is what it is, in one line (``GradeResult.explain()``)."""

    problem_id: str = ""
    prompt: str = ""
    attempts_left: int = 0
    verdict: str = ""
    passed: int = 0
    total: int = 0
    tests: list[dict[str, Any]] = []  # pydantic copies a default per instance
    reason: str = ""
