"""From a dataset row to what grading it needs, the same in every adapter.

Each framework hands a row differently (TRL as keyword columns, verl as
``ground_truth`` + ``extra_info``, SkyRL as ``extras``, slime as a
``Sample``, ``collimate grade`` as a JSON line), but once an adapter has
pulled out the ground truth, the row's other columns and its prompt, the
rest is one decision, made here:

* the entry point: the adapter's explicit one (a configured name or an
  entry column), else the row's ``entry_point`` / ``entry`` / ``fn_name``
  column (HumanEval, APPS), else what the ground truth names, else the
  default;
* the spec: :func:`~.registry.reward_spec_from_ground_truth` of the ground
  truth as the dataset library gave it, with the prompt's code;
* the program: :func:`~.extract.candidate_program` of a completion (the
  prompt + completion of HumanEval-style rows, unless ``join_prompt`` is
  off).

:class:`RowTasks` caches one task per distinct (ground truth, entry,
prompt): a GRPO group repeats its row for every completion.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import pluggy

from .contest import JudgedReward
from .dataset_rows import codecontests_ground_truth, program_ground_truth
from .extract import candidate_program, prompt_code
from .normalize import normalize_value
from .registry import reward_spec_from_ground_truth
from .spec import RewardSpec

__all__ = [
    "CODEFORCES_COLUMNS",
    "CONTEXT_COLUMNS",
    "ENTRY_COLUMNS",
    "HUB_TEST_COLUMNS",
    "MBPP_SETUP_COLUMNS",
    "RowTask",
    "RowTasks",
    "column_ground_truth",
    "hub_ground_truth",
    "row_entry",
    "row_task",
]

#: Row columns naming the function to call, in the order they are tried.
ENTRY_COLUMNS: Final = ("entry_point", "entry", "fn_name", "func_name")
#: The Hub datasets' own test columns, in the order they are tried when a
#: row has no ground-truth column: open-r1's ``verification_info`` and its
#: Codeforces ``official_tests``, CodeContests' ``public_tests`` (with
#: its private and generated ones), APPS' ``input_output``, MBPP's
#: ``test_list``, HumanEval's, KodCode's, HumanEval-X's and MBXP's
#: ``test``, MultiPL-E's ``tests``.
HUB_TEST_COLUMNS: Final = (
    "verification_info",
    "official_tests",
    "public_tests",
    "input_output",
    "test_list",
    "test",
    "tests",
)
#: What MBPP's ``test_list`` asserts need run first, as its harness runs it:
#: the full config's ``test_setup_code``, the sanitized config's ``test_imports``.
MBPP_SETUP_COLUMNS: Final = ("test_setup_code", "test_imports")
#: What open-r1's Codeforces ``official_tests`` are judged with.
CODEFORCES_COLUMNS: Final = (
    "language",
    "generated_checker",
    "time_limit",
    "memory_limit",
    "input_mode",
)


#: The columns besides the test column that :func:`column_ground_truth`
#: reads of a row (an adapter handing over only some columns passes these,
#: and the row's ``prompt``): MBPP's setup, open-r1 Codeforces' limits and
#: checker, the test programs' language, task id and stop tokens
#: (HumanEval-X's Go setup too), CodeContests' other tests and limits.
CONTEXT_COLUMNS: Final = (
    *MBPP_SETUP_COLUMNS,
    *CODEFORCES_COLUMNS,
    "task_id",
    "stop_tokens",
    "test_setup",
    "import",
    "private_tests",
    "generated_tests",
    "memory_limit_bytes",
    "input_file",
    "output_file",
)


def column_ground_truth(row: Mapping[str, Any], name: str) -> Any:
    """The ground truth in column ``name`` of ``row``. MBPP's ``test_list``
    comes with the row's :data:`MBPP_SETUP_COLUMNS`, so asserts that use
    ``math`` find the import MBPP runs before them."""
    value = row.get(name)
    if name == "public_tests" and value is not None:
        return codecontests_ground_truth(row)
    if name in ("test", "tests") and isinstance(value, str):
        program = program_ground_truth(row, value)
        if program is not None:
            return program
    if value is not None and name == "official_tests":
        judged = {"official_tests": value}
        judged.update({k: row[k] for k in CODEFORCES_COLUMNS if row.get(k) is not None})
        return judged
    if name != "test_list" or value is None:
        return value
    truth = {"test_list": value}
    truth.update({k: row[k] for k in MBPP_SETUP_COLUMNS if row.get(k) is not None})
    return truth


def hub_ground_truth(row: Mapping[str, Any]) -> Any:
    """The ground truth in the first of :data:`HUB_TEST_COLUMNS` the row
    has (see :func:`column_ground_truth`), or None."""
    for name in HUB_TEST_COLUMNS:
        if row.get(name) is not None:
            return column_ground_truth(row, name)
    return None


@dataclass(frozen=True)
class RowTask:
    """What grading completions of one row needs."""

    spec: RewardSpec
    entry: str
    #: the prompt's code when the candidate continues it (HumanEval), else None
    prompt: str | None = None
    join_prompt: bool = True

    def program(self, completion: str) -> str:
        """The program to grade for ``completion`` (a completion's text);
        a judged reward picks the code itself (its language's fence, its
        prompt joined)."""
        if isinstance(self.spec, JudgedReward):
            return completion
        return candidate_program(completion, self.entry, self.prompt, join_prompt=self.join_prompt)


def row_entry(row: Mapping[str, Any] | None, default: str = "solve") -> str:
    """The function a row names (:data:`ENTRY_COLUMNS`), else ``default``."""
    if row:
        for name in ENTRY_COLUMNS:
            value = normalize_value(row.get(name))
            if isinstance(value, str) and value.isidentifier():
                return value
    return default


def row_task(
    ground_truth: Any,
    *,
    entry: str | None = None,
    prompt: Any = None,
    row: Mapping[str, Any] | None = None,
    default_entry: str = "solve",
    join_prompt: bool = True,
    pm: pluggy.PluginManager | None = None,
) -> RowTask:
    """The :class:`RowTask` of a row (see the module docstring).

    ``row`` is the row's other columns (as the dataset library gives them);
    its ``prompt`` column is the prompt when ``prompt`` is not given. A
    ground truth no reward kind accepts raises ValueError.
    """
    if prompt is None and row is not None:
        prompt = row.get("prompt")
    prompt = normalize_value(prompt)
    hint = entry or row_entry(row, default_entry)
    spec = reward_spec_from_ground_truth(ground_truth, hint, prompt=prompt, pm=pm)
    named = getattr(spec, "entry", None)
    final = entry or (named if isinstance(named, str) and named else hint)
    code = prompt_code(prompt, final) if prompt is not None else None
    if final != hint and code is not None:
        # the ground truth named the function ({"test", "entry_point"}): the
        # prompt's code is found by that name, so build the spec with it
        spec = reward_spec_from_ground_truth(ground_truth, final, prompt=prompt, pm=pm)
    if code is None and not isinstance(spec, JudgedReward):
        # a ground truth that carries its prompt (a whole HumanEval row)
        carried = getattr(spec, "prompt", None)
        code = carried if isinstance(carried, str) else None
    return RowTask(spec=spec, entry=final, prompt=code, join_prompt=join_prompt)


def _key(*parts: Any) -> str:
    return json.dumps(
        [normalize_value(p) for p in parts], sort_keys=True, separators=(",", ":"), default=repr
    )


class RowTasks:
    """:func:`row_task` with a bounded cache: rows repeated across a group,
    or across steps, build their spec once. Errors are not cached. Safe to
    share between threads (verl scores samples from a thread pool)."""

    def __init__(
        self,
        *,
        default_entry: str = "solve",
        join_prompt: bool = True,
        pm: pluggy.PluginManager | None = None,
        size: int = 4096,
    ) -> None:
        self.default_entry = default_entry
        self.join_prompt = join_prompt
        self.pm = pm
        self.size = size
        self._cache: OrderedDict[str, RowTask] = OrderedDict()
        self._lock = threading.Lock()

    def get(
        self,
        ground_truth: Any,
        *,
        entry: str | None = None,
        prompt: Any = None,
        row: Mapping[str, Any] | None = None,
    ) -> RowTask:
        """The task of one row (see :func:`row_task`). Only the ground
        truth, the prompt and the entry columns are read from ``row``."""
        if prompt is None and row is not None:
            prompt = row.get("prompt")
        hint = entry or row_entry(row, "")
        key = _key(ground_truth, hint, prompt)
        with self._lock:
            task = self._cache.get(key)
            if task is not None:
                self._cache.move_to_end(key)
                return task
        task = row_task(
            ground_truth,
            entry=entry,
            prompt=prompt,
            row=row,
            default_entry=self.default_entry,
            join_prompt=self.join_prompt,
            pm=self.pm,
        )
        with self._lock:
            self._cache[key] = task
            if len(self._cache) > self.size:
                self._cache.popitem(last=False)
        return task
