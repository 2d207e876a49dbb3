"""The arguments of ``grade`` and ``grade_batch``, checked before any exec.

Both flavours of each call (blocking and async, :mod:`collimate_rl.pipeline._async.grading`)
share these: a bad argument raises ``TypeError`` / ``ValueError`` at once,
before anything is sent, so a typo never costs a round trip or half a batch.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..rewards.spec import RewardSpec
from .plan import Job, PackArg, check_pack, pack_size, packable
from .result import INFRA_ERROR_MODES, GradeResult, check_seed, check_timeout
from .targets import TargetFacts

__all__ = ["Specs", "asks_facts", "batch_jobs", "batch_pack_size", "one_job", "outcome"]

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


def batch_jobs(
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


def batch_pack_size(
    pack: PackArg, jobs: list[Job], facts: TargetFacts, concurrency: int, session: str | None
) -> int:
    """How many candidates one exec grades (``pack`` and the target's facts)."""
    return pack_size(pack, sum(packable(j.spec, session) for j in jobs), facts, concurrency)


def asks_facts(pack: PackArg, jobs: list[Job], session_id: str | None) -> bool:
    """Only ``pack="auto"`` with something to pack needs the target's word."""
    return pack == "auto" and session_id is None and len(jobs) > 1


def one_job(candidate: str, spec: RewardSpec, seed: str | None, timeout_seconds: int) -> Job:
    """The job of a lone ``grade`` (index 0), its arguments checked."""
    if not isinstance(candidate, str):
        raise TypeError(f"candidate must be str, got {type(candidate).__name__}")
    check_seed(seed)
    check_timeout(timeout_seconds)
    return Job(0, candidate, spec, seed)


def outcome(unit_result: GradeResult | BaseException) -> GradeResult:
    """A lone grade's result, or its backend error raised."""
    if isinstance(unit_result, BaseException):
        raise unit_result
    return unit_result
