"""Problems from dataset rows: a prompt for the policy, a ground truth for the grader.

A row is ``{"prompt": str, "ground_truth": <any format of
reward_spec_from_ground_truth>, "id"?: str}``; the ground truth may also sit
under ``reward_spec.ground_truth`` (the SkyRL / verl row shape). The server's
own rows come from ``$COLLIMATE_CODE_DATASET`` (a JSONL file) or, without it,
from the few problems shipped with this package.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from collimate_rl import RewardSpec, reward_spec_from_ground_truth

__all__ = ["DATASET_ENV", "Problem", "load_problems", "problem_from_row"]

DATASET_ENV = "COLLIMATE_CODE_DATASET"


@dataclass(frozen=True)
class Problem:
    """A posed problem. ``spec`` holds the tests and never leaves the server."""

    problem_id: str
    prompt: str
    spec: RewardSpec


def problem_from_row(row: Any, *, default_id: str = "") -> Problem:
    """A :class:`Problem`, or ``ValueError`` naming the key at fault."""
    if not isinstance(row, Mapping):
        raise ValueError(f"a row must be an object, got {type(row).__name__}")
    prompt = row.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError(f"row {row.get('id', default_id)!r}: 'prompt' must be a non-empty string")
    truth = row.get("ground_truth")
    if truth is None and isinstance(row.get("reward_spec"), Mapping):
        truth = row["reward_spec"].get("ground_truth")
    if truth is None:
        raise ValueError(
            f"row {row.get('id', default_id)!r}: no ground truth (expected 'ground_truth' "
            "or 'reward_spec.ground_truth')"
        )
    spec = reward_spec_from_ground_truth(truth)  # a malformed one raises ValueError
    return Problem(str(row.get("id", default_id)), prompt, spec)


def load_problems(path: str | None = None) -> list[Problem]:
    """The server's problems: ``path``, else ``$COLLIMATE_CODE_DATASET``, else
    the shipped ones."""
    path = path or os.environ.get(DATASET_ENV) or None
    if path is not None:
        text = Path(path).read_text(encoding="utf-8")
        origin = path
    else:
        text = resources.files(__package__).joinpath("problems.jsonl").read_text("utf-8")
        origin = "the shipped problems"
    problems = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            problems.append(problem_from_row(json.loads(line), default_id=f"row-{n}"))
        except ValueError as exc:  # json.JSONDecodeError is a ValueError too
            raise ValueError(f"{origin}, line {n}: {exc}") from exc
    if not problems:
        raise ValueError(f"{origin}: no problems")
    return problems
