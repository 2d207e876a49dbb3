"""Rewards: specs that build in-guest graders, and the grading entry points.

``from collimate_rl.rewards import grade, UnitTestReward, ...`` works as in
the earlier single-module release; the parts live in small modules:

* :mod:`.spec` -- the RewardSpec contract and the built-in base;
* :mod:`.kinds` -- UnitTestReward, PropertyReward, StdioReward;
* :mod:`..guest.grader` / :mod:`.program` -- the grader that runs in the guest;
* :mod:`.verdict` -- reading what a grader printed;
* :mod:`.extract` -- extract_code, candidate_program, prompt_code;
* :mod:`.normalize` -- dataset values (Arrow's None-filled keys, numpy) as plain data;
* :mod:`.rows` -- a dataset row to its spec, entry point and program (every
  adapter; the column names the adapters try, ``ENTRY_COLUMNS``,
  ``CONTEXT_COLUMNS``, ``HUB_TEST_COLUMNS``, and ``column_ground_truth`` /
  ``hub_ground_truth`` are re-exported here for the plugins);
* :mod:`.contest` -- ``ContestReward``, and ``JudgedReward``, the base of the
  rewards the server judges (``/v1/judge``) instead of an exec program;
* :mod:`.source_truths` -- test source strings (HumanEval, KodCode) as ground truths;
* :mod:`.registry` / :mod:`.builtin_kinds` -- reward kinds through plugins.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .appended_tests import ProgramReward
from .contest import ContestReward, JudgedReward
from .dataset_kinds import AssertReward, CallReward, PytestReward, StdinStdoutReward
from .extract import candidate_program, extract_code, prompt_code
from .kinds import PropertyReward, StdioReward, UnitTestReward
from .normalize import normalize_value
from .registry import reward_kind_registry, reward_spec_from_ground_truth
from .rows import (
    CONTEXT_COLUMNS,
    ENTRY_COLUMNS,
    HUB_TEST_COLUMNS,
    RowTask,
    RowTasks,
    column_ground_truth,
    hub_ground_truth,
    row_task,
)
from .spec import GradeContext, GuestReward, Outcome, RewardSpec
from .verdict import REWARD_LINE_PREFIX, VERDICT_MARKER

if TYPE_CHECKING:
    from ..grading import GradeResult, grade, grade_async, grade_batch, grade_batch_async

#: The grading entry points live in :mod:`collimate_rl.grading` and
#: :mod:`collimate_rl.batch` (which import this package); they are
#: re-exported lazily for the earlier ``collimate_rl.rewards`` import path
#: without an import cycle.
_FROM_GRADING = frozenset(
    {"GradeResult", "grade", "grade_async", "grade_batch", "grade_batch_async"}
)


def __getattr__(name: str) -> Any:
    if name in _FROM_GRADING:
        from .. import grading

        return getattr(grading, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CONTEXT_COLUMNS",
    "ENTRY_COLUMNS",
    "HUB_TEST_COLUMNS",
    "REWARD_LINE_PREFIX",
    "AssertReward",
    "CallReward",
    "ContestReward",
    "ProgramReward",
    "PytestReward",
    "StdinStdoutReward",
    "VERDICT_MARKER",
    "GradeContext",
    "GradeResult",
    "GuestReward",
    "JudgedReward",
    "Outcome",
    "PropertyReward",
    "RewardSpec",
    "RowTask",
    "RowTasks",
    "StdioReward",
    "UnitTestReward",
    "candidate_program",
    "column_ground_truth",
    "extract_code",
    "grade",
    "grade_async",
    "grade_batch",
    "grade_batch_async",
    "hub_ground_truth",
    "normalize_value",
    "prompt_code",
    "reward_kind_registry",
    "reward_spec_from_ground_truth",
    "row_task",
]
