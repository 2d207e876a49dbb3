"""The action and observation of the code environment (OpenEnv pydantic models).

The observation carries everything a policy may see: the problem's prompt,
and after a submission its reward and per-test feedback. The ground truth
stays on the server. Feedback lives in the observation's own fields because
the older OpenEnv line does not put ``metadata`` on the wire.
"""

from __future__ import annotations

from typing import Any

from openenv.core.env_server.types import Action, Observation
from pydantic import Field


class CollimateCodeAction(Action):  # type: ignore[misc]
    """A submission: Python code, or a completion with the code in a fenced
    block (the last block defining the entry point wins)."""

    code: str = Field(description="the candidate's code or a completion holding it")


class CollimateCodeObservation(Observation):  # type: ignore[misc]
    """A problem (after ``reset``) or a graded submission (after ``step``)."""

    problem_id: str = Field(default="", description="the dataset row's id")
    prompt: str = Field(default="", description="the problem statement")
    attempts_left: int = Field(default=0, description="submissions still allowed")
    verdict: str = Field(default="", description="'passed', 'failed' or '' before a submission")
    passed: int = Field(default=0, description="tests passed by the last submission")
    total: int = Field(default=0, description="tests of the problem")
    tests: list[dict[str, Any]] = Field(
        default_factory=list,
        description="per test: index, passed, and for a failure reason and message",
    )
