"""Packing: several candidates of a group graded by one exec.

A lone grade pays for a whole exec: a request, a clone wiped and forked, a
grader started. ``grade_batch(..., pack=N)`` sends up to ``N`` candidates in
one exec instead; the in-guest grader (:mod:`.rewards.grader.pack`) grades
them one after another, each exactly as it would be graded alone (its own
exec seed, time budget and process), and sweeps the guest between two (see
:mod:`.rewards.grader.sweep` for what the sweep kills, removes and refuses).

The rule that keeps packing safe is on this side: **a candidate's reward is
taken from a pack only if the pack wrote that candidate's verdict.** Every
other candidate of the pack (the pack failed, timed out, was killed by a
candidate, found a trace it could not sweep, or cannot run in this guest) is
graded again alone, so it meets exactly the failure semantics of a lone
grade. Packing never turns an infrastructure failure into a reward.

This module holds the pure steps; :mod:`collimate_rl.batch` sends them.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from .rewards.program import RuntimeForm
from .rewards.shipping import PackItem, ship_pack
from .rewards.spec import GradeContext, GuestReward, Outcome, RewardSpec, candidate_context
from .rewards.verdict import VERDICT_MARKER, read_frames
from .seeds import fresh_seed

__all__ = [
    "MAX_PACK_SECONDS",
    "PACK_BUDGETS",
    "PackedGrade",
    "PreparedPack",
    "check_pack",
    "pack_timeout",
    "pack_units",
    "prepare_pack",
    "read_pack",
]

#: The longest exec the wire allows (``timeout_seconds`` max).
MAX_PACK_SECONDS: Final = 3600
#: A pack's exec timeout, in candidate timeouts. A candidate that uses its
#: whole budget ends its pack (in the guest), so this only bounds a pack
#: that a candidate stalled (it can stop the grader: same uid) or one of
#: candidates that are all slow; either way, whoever has no verdict when
#: it expires is graded alone.
PACK_BUDGETS: Final = 4
_UNPACKED = "unpacked "


def check_pack(pack: int | None, spec: RewardSpec, session_id: str | None) -> int:
    """The pack size to use (1: each candidate alone). ``pack`` is validated;
    it is a request, not an order: a custom :class:`RewardSpec` (its program
    grades one candidate) and a warm session (the sweep between candidates
    would remove its other execs' files) grade alone."""
    if pack is None:
        return 1
    if isinstance(pack, bool) or not isinstance(pack, int) or pack < 1:
        raise ValueError(f"pack must be an int >= 1 or None, got {pack!r}")
    if not isinstance(spec, GuestReward) or session_id is not None:
        return 1
    return pack


def pack_units(total: int, pack: int) -> list[list[int]]:
    """Candidate indices in execs of at most ``pack``, in order."""
    return [list(range(at, min(at + pack, total))) for at in range(0, total, pack)]


def pack_timeout(timeout_seconds: int, size: int) -> int:
    """The exec timeout of a pack of ``size`` (see :data:`PACK_BUDGETS`)."""
    return min(MAX_PACK_SECONDS, timeout_seconds * min(size, PACK_BUDGETS))


@dataclass(frozen=True)
class PreparedPack:
    """One pack ready to send: per candidate its batch index, context and
    seed (drawn here when the caller gave none, so every result can say
    which seed it was graded with), and the exec's keyword arguments."""

    nonce: str
    indices: tuple[int, ...]
    contexts: tuple[GradeContext, ...]
    seeds: tuple[str, ...]
    exec_kwargs: dict[str, Any]


def prepare_pack(
    spec: GuestReward,
    candidates: Sequence[str],
    seeds: Sequence[str | None],
    indices: Sequence[int],
    *,
    timeout_seconds: int,
    form: RuntimeForm = "full",
) -> PreparedPack:
    """The exec grading the batch's candidates at ``indices`` (``candidates``
    and ``seeds`` are the whole batch's)."""
    chosen = [candidates[i] for i in indices]
    for candidate in chosen:
        if not isinstance(candidate, str):
            raise TypeError(f"candidate must be str, got {type(candidate).__name__}")
    contexts = tuple(
        candidate_context(c, secrets.token_hex(12), timeout_seconds, form) for c in chosen
    )
    drawn = tuple(seeds[i] or fresh_seed() for i in indices)
    nonce = secrets.token_hex(12)
    shipment = ship_pack(
        nonce,
        [PackItem(spec, ctx, c, s) for ctx, c, s in zip(contexts, chosen, drawn, strict=True)],
        form,
    )
    kwargs: dict[str, Any] = {
        "code": shipment.code,
        "files": shipment.files,
        "timeout_seconds": pack_timeout(timeout_seconds, len(chosen)),
        "seed": drawn[0],
    }
    return PreparedPack(nonce, tuple(indices), contexts, drawn, kwargs)


@dataclass(frozen=True)
class PackedGrade:
    """One candidate's grade as its pack wrote it."""

    index: int
    seed: str
    outcome: Outcome
    #: the seed the grader says it graded with (None: it did not say)
    seed_echo: str | None
    #: the grader's own time for this candidate
    elapsed_ms: float | None
    #: the candidate's own frame lines
    stdout: str


def read_pack(
    spec: GuestReward, prepared: PreparedPack, stdout: str
) -> tuple[list[PackedGrade], str | None]:
    """The grades a pack wrote, and why it stopped early (None: it did not
    say). Candidates missing from the list must be graded alone."""
    by_nonce: dict[str, list[str]] = {}  # frame lines, by the nonce they carry
    for line in stdout.splitlines():
        if line.startswith(VERDICT_MARKER):
            nonce = line[len(VERDICT_MARKER) :].partition(" ")[0]
            by_nonce.setdefault(nonce, []).append(line)
    grades: list[PackedGrade] = []
    for index, ctx, seed in zip(prepared.indices, prepared.contexts, prepared.seeds, strict=True):
        own = "\n".join(by_nonce.get(ctx.nonce, ()))
        frames = read_frames(own, ctx.nonce)
        if frames.verdict is None:
            continue
        if type(spec).outcome is GuestReward.outcome:  # (not made otherwise by a subclass)
            outcome = spec.outcome_from_frames(frames, own, 0)
        else:
            outcome = spec.outcome(own, 0, ctx)
        detail = dict(outcome.detail)
        echo = detail.pop("seed", None)
        elapsed = detail.pop("ms", None)
        grades.append(
            PackedGrade(
                index,
                seed,
                Outcome(outcome.reward, outcome.verdict, detail, outcome.infra_message),
                echo if isinstance(echo, str) else None,
                float(elapsed) if isinstance(elapsed, (int, float)) else None,
                own,
            )
        )
    head = f"{VERDICT_MARKER}{prepared.nonce} {_UNPACKED}"
    pack_lines = by_nonce.get(prepared.nonce, [])
    note = next((line[len(head) :] for line in pack_lines if line.startswith(head)), None)
    return grades, note
