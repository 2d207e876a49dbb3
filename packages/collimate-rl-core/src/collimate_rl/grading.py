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

A result a *policy* reads (a multi-turn environment's next observation) must
not quote the ground truth: :func:`sealed_lines` of the ground truth, then
:func:`sealed_result` of the result (or :func:`quotes` of one message), from
:mod:`collimate_rl.pipeline.redact`.
"""

from __future__ import annotations

from .batch import grade_batch, grade_batch_async
from .pipeline._async.grading import grade_async
from .pipeline._sync.grading import grade
from .pipeline.execs import PreparedGrade, prepare_grade
from .pipeline.forms import runtime_forms
from .pipeline.read import result_from_response
from .pipeline.redact import MIN_SEALED, quotes, sealed_lines, sealed_result
from .pipeline.result import (
    INFRA_ERROR_MODES,
    GradeResult,
    GraderInfraError,
    OnInfraError,
    infra_result,
)

__all__ = [
    "INFRA_ERROR_MODES",
    "MIN_SEALED",
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
    "quotes",
    "result_from_response",
    "runtime_forms",
    "sealed_lines",
    "sealed_result",
]

# their public home (reprs, pickles, the API docs), as before the twins were generated
for _fn in (grade, grade_async):
    _fn.__module__ = __name__
