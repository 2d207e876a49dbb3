"""What an exec that grades must carry: the program and the files.

This is the one place the SDK turns a spec and its candidates into an
exec's ``code`` and ``files``, for a lone grade (:func:`ship_grade`) and for
a pack (:func:`ship_pack`). Callers (:mod:`collimate_rl.grading`,
:mod:`collimate_rl.packing`) never assemble those themselves, so what goes
where (the candidate as a file, the grader's public config in the code, the
data that decides the reward sealed away from the candidate) is decided
here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from .program import RuntimeForm
from .spec import GradeContext, GuestReward, RewardSpec, delivered_text

__all__ = ["PackItem", "Shipment", "ship_grade", "ship_pack"]


@dataclass(frozen=True)
class Shipment:
    """An exec's ``code`` and ``files`` (``[{"path", "content"}]``)."""

    code: str
    files: list[dict[str, str]] = field(default_factory=list)


class PackItem(NamedTuple):
    """One candidate of a pack: its spec, context, source and exec seed."""

    spec: GuestReward
    ctx: GradeContext
    candidate: str
    seed: str


def ship_grade(spec: RewardSpec, ctx: GradeContext, candidate: str) -> Shipment:
    """The exec grading ``candidate`` alone."""
    files = [{"path": ctx.candidate_path, "content": delivered_text(candidate)}]
    files.extend(spec.program_files(ctx))
    return Shipment(spec.program(ctx), files)


def ship_pack(nonce: str, items: Sequence[PackItem], form: RuntimeForm = "full") -> Shipment:
    """The exec grading every item, one after another; ``nonce`` frames the
    pack's own lines. Items may carry different specs (one training step,
    many prompts)."""
    if not items:
        raise ValueError("a pack needs at least one candidate")
    files = [
        {"path": it.ctx.candidate_path, "content": delivered_text(it.candidate)} for it in items
    ]
    code, extra = GuestReward.pack_parts(nonce, items, form)
    files.extend(extra)
    return Shipment(code, files)
