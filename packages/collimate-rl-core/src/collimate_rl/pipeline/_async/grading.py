"""Grading, written once: ``grade_async`` and ``grade_batch_async``.

The blocking ``grade`` and ``grade_batch`` are generated from this module
(``tools/unasync.py``); :mod:`collimate_rl.grading` and
:mod:`collimate_rl.batch` are where both are imported from. What a grade
does is the grading pipeline (:mod:`collimate_rl.pipeline`): plan the
units, run the execs, read the verdicts. These functions only check the
arguments, pick the route and hand the work over.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...rewards.spec import RewardSpec
from ..arguments import (
    Specs,
    asks_facts,
    batch_jobs,
    batch_pack_size,
    one_job,
    outcome,
)
from ..coalesce import grade_coalesced_async
from ..collect import Collector, Progress, ResultCallback
from ..plan import PackArg, Unit, packable, plan_units
from ..result import GradeResult, OnInfraError, after_grade
from ..run import Route, run_unit_async
from ..schedule import run_batch_async
from ..targets import TargetFacts, facts_async

if TYPE_CHECKING:
    from ...transport._async import AsyncSessionClient

__all__ = ["grade_async", "grade_batch_async"]


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
    """Grade one candidate in a fresh clone of ``template_id`` (or in the
    warm session ``session_id``). Infrastructure failures raise
    :class:`~collimate_rl.CollimateError`; task failures are rewards.

    Grades to the same target that arrive together (from many threads of a
    blocking client, or many tasks of one event loop with an async one) are
    sent together in packs, each still graded as it would be alone;
    ``coalesce=False`` sends this one in an exec of its own."""
    job = one_job(candidate, spec, seed, timeout_seconds)
    route = Route(template_id, session_id, timeout_seconds)
    if coalesce and packable(spec, session_id):
        result = await grade_coalesced_async(client, route, job)
    else:
        result = outcome((await run_unit_async(client, route, Unit((job,)))).finished[0][1])
    after_grade(result, candidate, 0)
    return result


async def grade_batch_async(
    client: AsyncSessionClient,
    template_id: str,
    candidates: Sequence[str],
    spec: Specs,
    *,
    seeds: Sequence[str | None] | None = None,
    timeout_seconds: int = 30,
    concurrency: int = 24,
    on_infra_error: OnInfraError = "raise",
    progress: bool = False,
    on_result: ResultCallback | None = None,
    session_id: str | None = None,
    pack: PackArg = "auto",
) -> list[GradeResult]:
    """Grade candidates, at most ``concurrency`` execs at a time (threads
    with a blocking client; one event loop, no threads, with an async one).

    ``spec`` is one spec for all, or a list with one spec per candidate (a
    training step: many prompts, each with its group). Results are
    positional (``results[i]`` is ``candidates[i]``) except with
    ``on_infra_error="skip"``, which drops infra failures (each result keeps
    its ``index``). ``seeds`` gives one seed (or ``None``) per candidate, e.g.
    from :func:`~collimate_rl.group_seeds`. With ``"raise"`` no new grade
    starts after the first backend error, which is re-raised once the grades
    in flight have ended (the async flavour cancels them). ``on_result(index,
    result)`` and the ``collimate_rl_after_grade`` hook run on the calling
    thread as results arrive; ``progress=True`` draws a Rich bar when Rich is
    installed.

    Candidates are packed (several graded by one exec, each as it would be
    graded alone; see :mod:`collimate_rl.pipeline.plan`): ``pack="auto"``
    sizes packs from the backend (one per exec it runs at once),
    ``pack=N`` asks for ``N`` per exec, ``pack=1`` (or ``None``) sends each
    alone. A candidate a pack did not grade is re-packed or graded alone,
    so packing never changes a reward or turns a failure into one.
    """
    jobs = batch_jobs(candidates, spec, seeds, timeout_seconds, concurrency, on_infra_error, pack)
    collector = Collector(len(jobs), on_infra_error, on_result, Progress(progress, len(jobs)))
    if not jobs:
        return []
    known = await facts_async(client) if asks_facts(pack, jobs, session_id) else TargetFacts()
    size = batch_pack_size(pack, jobs, known, concurrency, session_id)
    route = Route(template_id, session_id, timeout_seconds)
    with collector.progress.running():
        units = plan_units(jobs, size, session_id)
        await run_batch_async(client, route, units, concurrency, collector)
    return collector.final()
