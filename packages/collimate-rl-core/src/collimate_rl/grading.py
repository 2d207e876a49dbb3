"""Grading one candidate: ``grade`` and ``grade_async``, and the names every
grade shares (``GradeResult``, ``GraderInfraError``, the failure modes).

A grade goes through the grading pipeline (:mod:`collimate_rl.pipeline`):
plan, run, read. Single grades that arrive together, from many threads or
many tasks of one event loop (how SkyRL, slime and verl call a reward: one
sample at a time), are coalesced into packs
(:mod:`collimate_rl.pipeline.coalesce`); a grade that arrives alone is
sent at once. A grade in a warm session (``session_id``), or of a custom
:class:`~collimate_rl.RewardSpec`, is always its own exec.

The rule: **an infrastructure failure is never a reward.** It raises
:class:`~collimate_rl.CollimateError`; a candidate that crashes, loops or
prints garbage is a task outcome, its reward read from the verdict.
Groups go through :mod:`collimate_rl.batch` (``grade_batch`` and its async
twin, also importable from here).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .batch import grade_batch, grade_batch_async
from .pipeline.coalesce import grade_coalesced, grade_coalesced_async
from .pipeline.execs import PreparedGrade, prepare_grade
from .pipeline.forms import runtime_forms
from .pipeline.plan import Job, Unit, packable
from .pipeline.read import result_from_response
from .pipeline.result import (
    INFRA_ERROR_MODES,
    GradeResult,
    GraderInfraError,
    OnInfraError,
    after_grade,
    check_seed,
    check_timeout,
    infra_result,
)
from .pipeline.run import Route, run_unit, run_unit_async
from .rewards.spec import RewardSpec

if TYPE_CHECKING:
    from .transport import AsyncSessionClient, SessionClient

__all__ = [
    "INFRA_ERROR_MODES",
    "GradeResult",
    "GraderInfraError",
    "OnInfraError",
    "PreparedGrade",
    "grade",
    "grade_async",
    "grade_batch",
    "grade_batch_async",
    "infra_result",
    "prepare_grade",
    "result_from_response",
    "runtime_forms",
]


def _job(candidate: str, spec: RewardSpec, seed: str | None, timeout_seconds: int) -> Job:
    if not isinstance(candidate, str):
        raise TypeError(f"candidate must be str, got {type(candidate).__name__}")
    check_seed(seed)
    check_timeout(timeout_seconds)
    return Job(0, candidate, spec, seed)


def _outcome(unit_result: GradeResult | BaseException) -> GradeResult:
    if isinstance(unit_result, BaseException):
        raise unit_result
    return unit_result


def grade(
    client: SessionClient,
    template_id: str,
    candidate: str,
    spec: RewardSpec,
    *,
    seed: str | None = None,
    timeout_seconds: int = 30,
    session_id: str | None = None,
    coalesce: bool = True,
) -> GradeResult:
    """Grade one candidate in a fresh clone of ``template_id`` (or in the
    warm session ``session_id``). Infrastructure failures raise
    :class:`~collimate_rl.CollimateError`; task failures are rewards.

    Called from many threads at once, grades to the same target are sent
    together in packs (each still graded as it would be alone);
    ``coalesce=False`` sends this one in an exec of its own."""
    job = _job(candidate, spec, seed, timeout_seconds)
    route = Route(template_id, session_id, timeout_seconds)
    if coalesce and packable(spec, session_id):
        result = grade_coalesced(client, route, job)
    else:
        result = _outcome(run_unit(client, route, Unit((job,))).finished[0][1])
    after_grade(result, candidate, 0)
    return result


async def grade_async(
    client: AsyncSessionClient,
    template_id: str,
    candidate: str,
    spec: RewardSpec,
    *,
    seed: str | None = None,
    timeout_seconds: int = 30,
    session_id: str | None = None,
    coalesce: bool = True,
) -> GradeResult:
    """:func:`grade` with an async client (``AsyncCollimateClient`` /
    ``AsyncGatewayClient``); concurrent tasks of one event loop grading on
    the same target are sent together in packs."""
    job = _job(candidate, spec, seed, timeout_seconds)
    route = Route(template_id, session_id, timeout_seconds)
    if coalesce and packable(spec, session_id):
        result = await grade_coalesced_async(client, route, job)
    else:
        result = _outcome((await run_unit_async(client, route, Unit((job,)))).finished[0][1])
    after_grade(result, candidate, 0)
    return result
