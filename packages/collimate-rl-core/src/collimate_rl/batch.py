"""Grading many candidates in one call: ``grade_batch`` (threads) and
``grade_batch_async`` (one event loop).

One call per training step: ``spec`` is one spec for every candidate (a
GRPO group) or one spec per candidate (many prompts with their groups),
and the candidates are packed across prompts. Results are positional. The
work itself is the grading pipeline (:mod:`collimate_rl.pipeline`): plan
the units, run the execs, read the verdicts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .pipeline.collect import Collector, Progress, ResultCallback
from .pipeline.plan import Job, PackArg, check_pack, pack_size, packable, plan_units
from .pipeline.result import INFRA_ERROR_MODES, GradeResult, OnInfraError, check_seed, check_timeout
from .pipeline.run import Route
from .pipeline.schedule import run_batch, run_batch_async
from .pipeline.targets import TargetFacts, facts, facts_async
from .rewards.spec import RewardSpec

if TYPE_CHECKING:
    from .transport import AsyncSessionClient, SessionClient

__all__ = ["ResultCallback", "grade_batch", "grade_batch_async"]

Specs = RewardSpec | Sequence[RewardSpec]


def _specs(candidates: Sequence[str], spec: Specs) -> list[RewardSpec]:
    if isinstance(spec, RewardSpec):
        return [spec] * len(candidates)
    raw: object = spec
    if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence):
        raise TypeError(
            f"spec must be a RewardSpec or a list of them, one per candidate, "
            f"got {type(spec).__name__}"
        )
    if len(spec) != len(candidates):
        raise ValueError(f"{len(spec)} specs for {len(candidates)} candidates")
    for s in spec:
        if not isinstance(s, RewardSpec):
            raise TypeError(f"spec must be a RewardSpec, got {type(s).__name__}")
    return list(spec)


def _seeds(candidates: Sequence[str], seeds: Sequence[str | None] | None) -> list[str | None]:
    if seeds is None:
        return [None] * len(candidates)
    if isinstance(seeds, str):
        raise TypeError("seeds must be a sequence of seeds, one per candidate (not a str)")
    if len(seeds) != len(candidates):
        raise ValueError(f"{len(seeds)} seeds for {len(candidates)} candidates")
    for s in seeds:
        check_seed(s)
    return list(seeds)


def _jobs(
    candidates: Sequence[str],
    spec: Specs,
    seeds: Sequence[str | None] | None,
    timeout_seconds: int,
    concurrency: int,
    on_infra_error: str,
    pack: PackArg,
) -> list[Job]:
    """Every argument checked before any exec; one job per candidate."""
    if on_infra_error not in INFRA_ERROR_MODES:
        raise ValueError(
            f"on_infra_error must be one of {INFRA_ERROR_MODES}, got {on_infra_error!r}"
        )
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be an int >= 1, got {concurrency!r}")
    check_timeout(timeout_seconds)
    check_pack(pack)
    for candidate in candidates:
        if not isinstance(candidate, str):
            raise TypeError(f"candidate must be str, got {type(candidate).__name__}")
    specs = _specs(candidates, spec)
    per_seed = _seeds(candidates, seeds)
    rows = zip(candidates, specs, per_seed, strict=True)
    return [Job(i, c, s, seed) for i, (c, s, seed) in enumerate(rows)]


def _size(
    pack: PackArg, jobs: list[Job], facts: TargetFacts, concurrency: int, session: str | None
) -> int:
    return pack_size(pack, sum(packable(j.spec, session) for j in jobs), facts, concurrency)


def _asks_facts(pack: PackArg, jobs: list[Job], session_id: str | None) -> bool:
    """Only ``pack="auto"`` with something to pack needs the target's word."""
    return pack == "auto" and session_id is None and len(jobs) > 1


def grade_batch(
    client: SessionClient,
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
    """Grade candidates, at most ``concurrency`` execs at a time.

    ``spec`` is one spec for all, or a list with one spec per candidate (a
    training step: many prompts, each with its group). Results are
    positional (``results[i]`` is ``candidates[i]``) except with
    ``on_infra_error="skip"``, which drops infra failures (each result keeps
    its ``index``). ``seeds`` gives one seed (or ``None``) per candidate, e.g.
    from :func:`~collimate_rl.group_seeds`. With ``"raise"`` no new grade
    starts after the first backend error, and that error is re-raised once
    the grades in flight have finished. ``on_result(index, result)`` and
    the ``collimate_rl_after_grade`` hook run on the calling thread as
    results arrive; ``progress=True`` draws a Rich bar when Rich is installed.

    Candidates are packed (several graded by one exec, each as it would be
    graded alone; see :mod:`collimate_rl.pipeline.plan`): ``pack="auto"``
    sizes packs from the backend (one per exec it runs at once),
    ``pack=N`` asks for ``N`` per exec, ``pack=1`` (or ``None``) sends each
    alone. A candidate a pack did not grade is re-packed or graded alone,
    so packing never changes a reward or turns a failure into one.
    """
    jobs = _jobs(candidates, spec, seeds, timeout_seconds, concurrency, on_infra_error, pack)
    collector = Collector(len(jobs), on_infra_error, on_result, Progress(progress, len(jobs)))
    if not jobs:
        return []
    known = facts(client) if _asks_facts(pack, jobs, session_id) else TargetFacts()
    size = _size(pack, jobs, known, concurrency, session_id)
    route = Route(template_id, session_id, timeout_seconds)
    with collector.progress.running():
        run_batch(client, route, plan_units(jobs, size, session_id), concurrency, collector)
    return collector.final()


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
    """:func:`grade_batch` on one event loop with an async client: no
    threads, ``concurrency`` execs in flight. With ``"raise"`` the grades
    still in flight are cancelled at the first backend error, which is then
    re-raised."""
    jobs = _jobs(candidates, spec, seeds, timeout_seconds, concurrency, on_infra_error, pack)
    collector = Collector(len(jobs), on_infra_error, on_result, Progress(progress, len(jobs)))
    if not jobs:
        return []
    known = await facts_async(client) if _asks_facts(pack, jobs, session_id) else TargetFacts()
    size = _size(pack, jobs, known, concurrency, session_id)
    route = Route(template_id, session_id, timeout_seconds)
    with collector.progress.running():
        units = plan_units(jobs, size, session_id)
        await run_batch_async(client, route, units, concurrency, collector)
    return collector.final()
