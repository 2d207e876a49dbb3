"""What a unit's exec carries: its ``code``, ``files``, timeout and seed.

The program and its files come from :mod:`collimate_rl.rewards.shipping`
(the one place that decides what goes where); this module adds what the
exec needs around them: a fresh nonce per grade (concurrent grades in one
warm session never share a file or a frame), the context needed to read
the answer, and for a pack its exec timeout and every candidate's seed
(drawn here when the caller gave none, so every result can say which seed
it was graded with).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..rewards.program import RuntimeForm
from ..rewards.shipping import PackItem, ship_grade, ship_pack
from ..rewards.spec import GradeContext, GuestReward, RewardSpec, candidate_context
from ..seeds import fresh_seed
from .plan import Job

__all__ = [
    "MAX_PACK_SECONDS",
    "PACK_BUDGETS",
    "PreparedGrade",
    "PreparedPack",
    "pack_timeout",
    "prepare_grade",
    "prepare_pack",
]

#: The longest exec the wire allows (``timeout_seconds`` max).
MAX_PACK_SECONDS: Final = 3600
#: A pack's exec timeout, in candidate timeouts. A candidate that uses its
#: whole budget ends its pack (in the guest), and none can stop the grader
#: (see ``guest/separation.py``), so this only bounds a pack of
#: candidates that are all slow, or a guest that is: whoever has no verdict
#: when it expires is planned again (see :func:`.plan.follow_up`).
PACK_BUDGETS: Final = 4


def _check_candidate(candidate: object) -> None:
    if not isinstance(candidate, str):
        raise TypeError(f"candidate must be str, got {type(candidate).__name__}")


@dataclass(frozen=True)
class PreparedGrade:
    """One grade ready to send: the exec's keyword arguments and the context
    needed to read its answer."""

    ctx: GradeContext
    seed: str | None
    exec_kwargs: dict[str, Any]


def prepare_grade(
    spec: RewardSpec,
    candidate: str,
    *,
    seed: str | None,
    timeout_seconds: int,
    form: RuntimeForm = "full",
) -> PreparedGrade:
    """The exec grading ``candidate`` alone."""
    _check_candidate(candidate)
    ctx = candidate_context(candidate, secrets.token_hex(12), timeout_seconds, form)
    shipment = ship_grade(spec, ctx, candidate)
    kwargs: dict[str, Any] = {
        "code": shipment.code,
        "files": shipment.files,
        "timeout_seconds": timeout_seconds,
        "seed": seed,
    }
    return PreparedGrade(ctx, seed, kwargs)


def pack_timeout(timeout_seconds: int, size: int) -> int:
    """The exec timeout of a pack of ``size`` (see :data:`PACK_BUDGETS`)."""
    return min(MAX_PACK_SECONDS, timeout_seconds * min(size, PACK_BUDGETS))


@dataclass(frozen=True)
class PreparedPack:
    """One pack ready to send: per candidate its spec, context and seed, in
    the order the guest grades them, and the exec's keyword arguments."""

    nonce: str
    specs: tuple[GuestReward, ...]
    contexts: tuple[GradeContext, ...]
    seeds: tuple[str, ...]
    exec_kwargs: dict[str, Any]

    @property
    def form(self) -> RuntimeForm:
        return self.contexts[0].form


def prepare_pack(
    jobs: Sequence[Job], *, timeout_seconds: int, form: RuntimeForm = "full"
) -> PreparedPack:
    """The exec grading ``jobs`` one after another (their specs, one or
    several, must be :class:`GuestReward`)."""
    specs: list[GuestReward] = []
    for job in jobs:
        _check_candidate(job.candidate)
        if not isinstance(job.spec, GuestReward):
            raise TypeError(f"{type(job.spec).__name__} cannot be packed: it grades alone")
        specs.append(job.spec)
    contexts = tuple(
        candidate_context(job.candidate, secrets.token_hex(12), timeout_seconds, form)
        for job in jobs
    )
    seeds = tuple(job.seed or fresh_seed() for job in jobs)
    nonce = secrets.token_hex(12)
    items = [
        PackItem(spec, ctx, job.candidate, seed)
        for spec, ctx, job, seed in zip(specs, contexts, jobs, seeds, strict=True)
    ]
    shipment = ship_pack(nonce, items, form)
    kwargs: dict[str, Any] = {
        "code": shipment.code,
        "files": shipment.files,
        "timeout_seconds": pack_timeout(timeout_seconds, len(jobs)),
        "seed": seeds[0],
    }
    return PreparedPack(nonce, tuple(specs), contexts, seeds, kwargs)
