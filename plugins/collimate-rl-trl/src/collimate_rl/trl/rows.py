"""A TRL batch's columns, row by row, as ``CollimateReward`` reads them.

TRL hands a reward function every dataset column but ``prompt`` as a
keyword list, one entry per completion (each prompt's row repeated for its
``num_generations`` completions), and the prompts as ``prompts``. This
module picks out of those lists what a row's grading needs (the entry
columns core's :class:`~collimate_rl.RowTasks` reads) and what names the
row in an error (an id column).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from collimate_rl import normalize_value
from collimate_rl.rewards import CONTEXT_COLUMNS, ENTRY_COLUMNS, column_ground_truth

__all__ = [
    "ID_COLUMNS",
    "TRL_KEYWORDS",
    "BatchRows",
    "prompt_at",
]

#: Keywords TRL adds that are not dataset columns.
TRL_KEYWORDS: Final = frozenset({"trainer_state", "log_extra", "log_metric", "environments"})

#: Columns naming a dataset row, in the order they are tried (Hub datasets:
#: HumanEval's and MBPP's ``task_id``, verl-style ``index``, APPS' and
#: open-r1's ``problem_id``, KodCode's ``question_id``).
ID_COLUMNS: Final = ("id", "task_id", "index", "problem_id", "question_id")


class BatchRows:
    """One reward call's columns, each checked to hold one entry per completion."""

    def __init__(
        self, owner: str, kwargs: Mapping[str, Any], n: int, id_column: str | None = None
    ) -> None:
        self.owner = owner
        self.kwargs = kwargs
        self.n = n
        #: the column naming rows: the one asked for, else the first of ID_COLUMNS present
        self.id_name = id_column or next((c for c in ID_COLUMNS if c in kwargs), None)
        self._ids: list[Any] | None = None

    def column(self, name: str) -> list[Any]:
        """The column ``name`` (KeyError naming the columns there are)."""
        if name not in self.kwargs:
            columns = sorted(k for k in self.kwargs if k not in TRL_KEYWORDS)
            raise KeyError(
                f"{self.owner}: the dataset has no column {name!r} "
                f"(columns passed by TRL: {', '.join(columns) or 'none'})"
            )
        values = list(self.kwargs[name])
        if len(values) != self.n:
            raise ValueError(
                f"{self.owner}: column {name!r} has {len(values)} entries for {self.n} completions"
            )
        return values

    def ground_truths(self, name: str, prompts: Sequence[Any] = ()) -> list[Any]:
        """The ground-truth column ``name``, row by row, as core's
        :func:`~collimate_rl.rewards.rows.column_ground_truth` reads a row
        (with its :data:`~collimate_rl.rewards.rows.CONTEXT_COLUMNS` the
        dataset has, and its prompt): MBPP's ``test_list`` comes with its
        setup columns, a MultiPL-E row's ``tests`` with its language and
        prompt, as their harnesses run them."""
        context = {c: self.column(c) for c in CONTEXT_COLUMNS if c in self.kwargs and c != name}
        values = self.column(name)
        truths = []
        for i, value in enumerate(values):
            row = {name: value, **{c: col[i] for c, col in context.items()}}
            if len(prompts) == self.n and isinstance(prompts[i], str):
                row["prompt"] = prompts[i]
            truths.append(column_ground_truth(normalize_value(row), name))
        return truths

    def entry_columns(self) -> dict[str, list[Any]]:
        """The columns among :data:`~collimate_rl.rewards.rows.ENTRY_COLUMNS`
        the dataset has (HumanEval's ``entry_point``, APPS' ``fn_name``)."""
        return {
            name: [normalize_value(v) for v in self.column(name)]
            for name in ENTRY_COLUMNS
            if name in self.kwargs
        }

    def label(self, i: int) -> str:
        """How an error names row ``i`` of the batch: by its id column when
        the dataset has one, always with its batch position."""
        if self.id_name is None:
            return (
                f"row at batch position {i} (the dataset has no "
                f"{'/'.join(ID_COLUMNS)} column to name it by)"
            )
        if self._ids is None:
            self._ids = self.column(self.id_name)
        return f"row {self.id_name}={normalize_value(self._ids[i])!r} (batch position {i})"


def prompt_at(prompts: Sequence[Any] | None, i: int, n: int) -> Any:
    """Completion ``i``'s prompt (a string, or a conversation), when TRL
    gave one per completion."""
    if prompts is None or len(prompts) != n:
        return None
    return normalize_value(prompts[i])
