"""``compute_score`` for verl's ``reward.custom_reward_function``.

verl calls ``compute_score(data_source=, solution_str=, ground_truth=,
extra_info=, **reward_kwargs)`` once per sample: its reward loop runs a
blocking function in a thread pool and awaits a coroutine function; its
``batch`` reward manager calls ``compute_score(data_sources=,
solution_strs=, ground_truths=, extra_infos=)`` once per batch. Each
returns a dict with ``score`` (verl's reward) and the verdict, with the
same keys for every sample (verl gathers each key into a column, taking the
keys of the batch's first dict):

``score``, ``acc`` (all tests passed), ``passed``, ``total``, ``verdict``
(``passed`` / ``failed`` / ``infra_error``), ``infra_error``, ``error``,
``reason`` (why the score is what it is, one line:
:meth:`~collimate_rl.GradeResult.explain`).

A row is read as verl hands it: ``ground_truth`` is the row's
``reward_model.ground_truth`` as ``datasets`` (or pandas) loaded it from
the parquet file (Arrow's ``None``-filled struct keys, numpy arrays, the
Hub's own test columns), through core's :class:`~collimate_rl.RowTasks`.
The function graded is the ``entry`` option, else ``extra_info``'s
``entry_point`` (``entry``, ``fn_name``, ``func_name``), else what the
ground truth names, else ``solve``. The prompt whose code a HumanEval-style
response continues is ``extra_info["prompt"]``, else a ``prompt`` the
ground truth carries (verl hands ``compute_score`` neither the row's
``prompt`` column nor the decoded prompt).

An infrastructure failure raises by default (the step stops, nothing is
learnt from it). With ``on_infra_error="zero"`` (a keyword, or
``$COLLIMATE_VERL_ON_INFRA_ERROR=zero``) it is a 0.0 flagged
``infra_error: True`` instead: visible in verl's metrics, never silent.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from collimate_rl import (
    CollimateError,
    GradeResult,
    RewardSpec,
    RowTasks,
    grade,
    grade_async,
    grade_batch,
    normalize_value,
)
from collimate_rl.rewards import ENTRY_COLUMNS
from collimate_rl.seeds import DET_SEED, seed_from_key
from collimate_rl.verl.clients import async_client, sync_client
from collimate_rl.verl.options import ScoreOptions, options_from
from collimate_rl.verl.trajectories import INFRA_ERROR_KEY

__all__ = [
    "ID_KEYS",
    "compute_score",
    "compute_score_async",
    "compute_score_batch",
    "row_label",
    "score_dict",
]

log = logging.getLogger("collimate_rl.verl")

#: ``extra_info`` keys naming a dataset row, in the order they are tried
#: (verl's preprocessing scripts write ``index``; HumanEval has ``task_id``).
ID_KEYS: Final = ("index", "task_id", "id", "problem_id")

# One cache of row tasks per join_prompt setting, shared by verl's threads:
# the responses of a prompt group share their row, built once (RowTasks locks).
_tasks = {join: RowTasks(join_prompt=join) for join in (True, False)}


@dataclass(frozen=True)
class _Task:
    code: str
    spec: RewardSpec
    seed: str | None
    data_source: Any
    extra_info: Any

    def label(self) -> str:
        return row_label(self.data_source, self.extra_info)


def row_label(data_source: Any, extra_info: Any) -> str:
    """How messages name a row: by ``extra_info``'s ``index`` (``task_id``,
    ``id``, ``problem_id``) and ``split`` when it has them."""
    info = extra_info if isinstance(extra_info, Mapping) else {}
    for key in ID_KEYS:
        value = normalize_value(info.get(key))
        if value is not None:
            split = normalize_value(info.get("split"))
            where = f" of split {split!r}" if isinstance(split, str) else ""
            return f"the {data_source!r} row extra_info[{key!r}]={value!r}{where}"
    return f"a {data_source!r} row (its extra_info has no {'/'.join(ID_KEYS)})"


def _seed(options: ScoreOptions, data_source: Any, ground_truth: Any) -> str | None:
    """CRN: every response to one prompt shares its ground truth, so the key
    ``(data_source, ground_truth)`` (the ground truth normalised) gives a
    whole group one seed."""
    if options.seed_mode == "vanilla":
        return None
    if options.seed_mode == "deterministic":
        return DET_SEED
    key = json.dumps([str(data_source), ground_truth], sort_keys=True, default=str)
    return seed_from_key(key)


def _task(
    options: ScoreOptions, data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any
) -> _Task:
    if not isinstance(solution_str, str):
        raise TypeError(
            f"collimate_rl.verl: {row_label(data_source, extra_info)}: solution_str must be a "
            f"string; got {type(solution_str).__name__}"
        )
    info = extra_info if isinstance(extra_info, Mapping) else {}
    row = {key: normalize_value(info[key]) for key in ENTRY_COLUMNS if key in info}
    truth = normalize_value(ground_truth)
    try:
        # the prompt a HumanEval-style response continues: extra_info's, else
        # the one a whole HumanEval row stored as the ground truth carries
        # (RowTasks reads it from the spec)
        task = _tasks[options.join_prompt].get(
            truth, entry=options.entry, prompt=normalize_value(info.get("prompt")), row=row
        )
    except ValueError as exc:
        raise ValueError(
            f"collimate_rl.verl: the ground_truth of {row_label(data_source, extra_info)} is "
            f"not a test spec collimate-rl can grade: {exc}"
        ) from None
    return _Task(
        task.program(solution_str),
        task.spec,
        _seed(options, data_source, truth),
        data_source,
        extra_info,
    )


def score_dict(result: GradeResult) -> dict[str, Any]:
    """verl's result dict of one grade (the same keys for every sample)."""
    detail = result.detail or {}
    passed = detail.get("passed")
    total = detail.get("total")
    return {
        "score": float(result.reward),
        "acc": bool(result.passed),
        "passed": int(passed) if isinstance(passed, int) else int(result.passed),
        "total": int(total) if isinstance(total, int) else 1,
        "verdict": result.verdict,
        "infra_error": bool(result.infra_error),
        "error": result.error or "",
        "reason": result.explain(),
    }


def _scored(task: _Task, result: GradeResult) -> dict[str, Any]:
    scored = score_dict(result)
    if log.isEnabledFor(logging.DEBUG):
        log.debug("%s: %s", task.label(), scored["reason"])
    return scored


def _infra(
    options: ScoreOptions, task: _Task | str, error: CollimateError, message: str
) -> dict[str, Any]:
    if options.on_infra_error == "raise":
        raise error
    log.warning(
        "collimate_rl.verl: %s: infrastructure failure scored as a flagged 0.0: %s",
        task if isinstance(task, str) else task.label(),
        message,
    )
    return {
        "score": 0.0,
        "acc": False,
        "passed": 0,
        "total": 0,
        "verdict": "infra_error",
        "infra_error": True,
        "error": message,
        "reason": f"infra_error: {message}",
    }


def _failed(options: ScoreOptions, task: _Task, error: CollimateError) -> dict[str, Any]:
    return _infra(options, task, error, f"{type(error).__name__}: {error}")


def _tool_failed(options: ScoreOptions, data_source: Any, extra_info: Any) -> dict[str, Any] | None:
    """A sample whose trajectory lost its sandbox (``CollimatePythonTool``
    flags it in ``extra_fields``, which verl's reward managers merge into
    ``extra_info``) is an infrastructure failure, whatever its response."""
    info = extra_info if isinstance(extra_info, Mapping) else {}
    failure = info.get(INFRA_ERROR_KEY)
    if not failure:
        return None
    label = row_label(data_source, extra_info)
    message = f"the Python tool's sandbox failed during the trajectory: {failure}"
    return _infra(options, label, CollimateError(f"{label}: {message}"), message)


def compute_score(
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """Grade one response (blocking). Concurrent calls from verl's threads
    share one client and leave as packs."""
    options = options_from(kwargs)
    failed = _tool_failed(options, data_source, extra_info)
    if failed is not None:
        return failed
    task = _task(options, data_source, solution_str, ground_truth, extra_info)
    try:
        result = grade(
            sync_client(options.target),
            options.template,
            task.code,
            task.spec,
            seed=task.seed,
            timeout_seconds=options.timeout_seconds,
        )
    except CollimateError as exc:
        return _failed(options, task, exc)
    return _scored(task, result)


async def compute_score_async(
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """Grade one response on the running loop (verl awaits a coroutine
    function). Concurrent calls on one loop share its client and leave as packs."""
    options = options_from(kwargs)
    failed = _tool_failed(options, data_source, extra_info)
    if failed is not None:
        return failed
    task = _task(options, data_source, solution_str, ground_truth, extra_info)
    try:
        result = await grade_async(
            async_client(options.target),
            options.template,
            task.code,
            task.spec,
            seed=task.seed,
            timeout_seconds=options.timeout_seconds,
        )
    except CollimateError as exc:
        return _failed(options, task, exc)
    return _scored(task, result)


def compute_score_batch(
    data_sources: Sequence[Any],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping[str, Any] | None] | None = None,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """verl's ``batch`` reward manager: one call per batch, one dict per sample."""
    options = options_from(kwargs)
    n = len(solution_strs)
    infos = list(extra_infos) if extra_infos is not None else [None] * n
    if not len(data_sources) == len(ground_truths) == len(infos) == n:
        raise ValueError(
            "data_sources, solution_strs, ground_truths and extra_infos must have one entry "
            f"per sample; got {len(data_sources)}, {n}, {len(ground_truths)}, {len(infos)}"
        )
    # samples whose tool sandbox failed are not graded (raise, or flagged 0.0)
    flagged = {}
    for i in range(n):
        failed = _tool_failed(options, data_sources[i], infos[i])
        if failed is not None:
            flagged[i] = failed
    tasks = []
    for i in range(n):
        if i in flagged:
            continue
        try:
            tasks.append(
                _task(options, data_sources[i], solution_strs[i], ground_truths[i], infos[i])
            )
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{exc} (batch position {i})") from None
    results = (
        grade_batch(
            sync_client(options.target),
            options.template,
            [t.code for t in tasks],
            [t.spec for t in tasks],
            seeds=[t.seed for t in tasks],
            timeout_seconds=options.timeout_seconds,
            on_infra_error="raise" if options.on_infra_error == "raise" else "zero",
        )
        if tasks
        else []
    )
    graded = []
    for task, r in zip(tasks, results, strict=True):
        if r.infra_error:
            message = r.error or "infrastructure failure"
            graded.append(_infra(options, task, CollimateError(message), message))
        else:
            graded.append(_scored(task, r))
    rest = iter(graded)
    return [flagged[i] if i in flagged else next(rest) for i in range(n)]
