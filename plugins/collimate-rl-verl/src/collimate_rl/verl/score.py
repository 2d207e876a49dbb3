"""``compute_score`` for verl's ``reward.custom_reward_function``.

verl calls ``compute_score(data_source=, solution_str=, ground_truth=,
extra_info=, **reward_kwargs)`` once per sample: its reward loop runs a
blocking function in a thread pool and awaits a coroutine function; its
``batch`` reward manager calls ``compute_score(data_sources=,
solution_strs=, ground_truths=, extra_infos=)`` once per batch. Each
returns a dict with ``score`` (verl's reward) and the verdict, with the
same keys for every sample (verl gathers each key into a column):

``score``, ``acc`` (all tests passed), ``passed``, ``total``, ``verdict``
(``passed`` / ``failed`` / ``infra_error``), ``infra_error``, ``error``.

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
from typing import Any

from collimate_rl import (
    CollimateError,
    GradeResult,
    RewardSpec,
    extract_code,
    grade,
    grade_async,
    grade_batch,
    reward_spec_from_ground_truth,
)
from collimate_rl.seeds import DET_SEED, seed_from_key
from collimate_rl.verl.clients import async_client, sync_client
from collimate_rl.verl.options import ScoreOptions, options_from

__all__ = ["compute_score", "compute_score_async", "compute_score_batch", "score_dict"]

log = logging.getLogger("collimate_rl.verl")

#: Where a row's function name may be, when no ``entry`` keyword names it.
_ENTRY_KEYS = ("entry_point", "fn_name", "func_name")


@dataclass(frozen=True)
class _Task:
    code: str
    spec: RewardSpec
    seed: str | None


def _entry(options: ScoreOptions, extra_info: Any) -> str:
    if options.entry is not None:
        return options.entry
    if isinstance(extra_info, Mapping):
        for key in _ENTRY_KEYS:
            value = extra_info.get(key)
            if isinstance(value, str) and value:
                return value
    return "solve"


def _seed(options: ScoreOptions, data_source: Any, ground_truth: Any) -> str | None:
    """CRN: every response to one prompt shares its ground truth, so the key
    ``(data_source, ground_truth)`` gives a whole group one seed."""
    if options.seed_mode == "vanilla":
        return None
    if options.seed_mode == "deterministic":
        return DET_SEED
    key = json.dumps([str(data_source), ground_truth], sort_keys=True, default=str)
    return seed_from_key(key)


def plain(value: Any) -> Any:
    """``value`` with numpy arrays and scalars made lists and Python scalars,
    at any depth: verl reads its rows from parquet through pandas, so a
    list column of a ground truth can arrive as an ``ndarray``."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    tolist = getattr(value, "tolist", None)
    if callable(tolist) and not isinstance(value, (str, bytes)):
        return plain(tolist())
    return value


def _task(
    options: ScoreOptions, data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any
) -> _Task:
    ground_truth = plain(ground_truth)
    if not isinstance(solution_str, str):
        raise TypeError(f"solution_str must be a string; got {type(solution_str).__name__}")
    entry = _entry(options, extra_info)
    try:
        spec = reward_spec_from_ground_truth(ground_truth, entry)
    except ValueError as exc:
        raise ValueError(
            f"collimate_rl.verl: the ground_truth of a {data_source!r} row is not a test "
            f"spec collimate-rl can grade: {exc}"
        ) from None
    code = extract_code(solution_str, entry)
    return _Task(code, spec, _seed(options, data_source, ground_truth))


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
    }


def _infra(options: ScoreOptions, error: CollimateError) -> dict[str, Any]:
    if options.on_infra_error == "raise":
        raise error
    log.warning("collimate_rl.verl: infrastructure failure scored as a flagged 0.0: %s", error)
    return {
        "score": 0.0,
        "acc": False,
        "passed": 0,
        "total": 0,
        "verdict": "infra_error",
        "infra_error": True,
        "error": f"{type(error).__name__}: {error}",
    }


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
        return _infra(options, exc)
    return score_dict(result)


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
        return _infra(options, exc)
    return score_dict(result)


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
    tasks = [
        _task(options, data_sources[i], solution_strs[i], ground_truths[i], infos[i])
        for i in range(n)
    ]
    results = grade_batch(
        sync_client(options.target),
        options.template,
        [t.code for t in tasks],
        [t.spec for t in tasks],
        seeds=[t.seed for t in tasks],
        timeout_seconds=options.timeout_seconds,
        on_infra_error="raise" if options.on_infra_error == "raise" else "zero",
    )
    out = []
    for r in results:
        if r.infra_error:
            out.append(_infra(options, CollimateError(r.error or "infrastructure failure")))
        else:
            out.append(score_dict(r))
    return out
