"""Step 3: read the verdicts. An exec's answer becomes GradeResults, each
read by the candidate's own spec.

A lone grade's answer is read whole by its spec (:func:`result_from_response`).
A pack's answer holds every candidate's frames, each under the
candidate's own nonce, and the pack's own lines under the pack's nonce
(:func:`read_pack`). **A candidate's reward is taken from a pack only if
the pack wrote that candidate's own verdict and that verdict does not
blame the infrastructure**; what becomes of the others is the plan's
business (:func:`.plan.follow_up`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..rewards.spec import GuestReward, Outcome, RewardSpec
from ..rewards.verdict import VERDICT_MARKER, asked_for_full, read_frames
from .execs import PreparedGrade, PreparedPack
from .plan import Job
from .result import GradeResult, float_or_none

__all__ = [
    "CANNOT_PACK",
    "PackReading",
    "PackedGrade",
    "asked_again_in_full",
    "read_pack",
    "read_pack_answer",
    "result_from_response",
]

#: A pack's note that its guest can never run a pack (``<marker><nonce>
#: unpacked cannot pack: <why>``): a root guest, a shared guest, no fd
#: passing. Any other note is about this pack only.
CANNOT_PACK: Final = "cannot pack: "
_UNPACKED = "unpacked "


def _stdout(response: Mapping[str, Any]) -> str:
    stdout = response.get("stdout")
    return stdout if isinstance(stdout, str) else ""


def asked_again_in_full(nonce: str, form: str, response: Mapping[str, Any]) -> bool:
    """The guest could not use the short program form it got (the template
    changed) and asks for the full one."""
    return form != "full" and asked_for_full(_stdout(response), nonce)


def result_from_response(
    spec: RewardSpec, prepared: PreparedGrade, response: Mapping[str, Any], index: int = 0
) -> GradeResult:
    """The GradeResult of one lone grade's ExecResponse, as its spec reads it."""
    exit_code = response.get("exit_code")
    code = exit_code if isinstance(exit_code, int) else -2
    outcome = spec.outcome(_stdout(response), code, prepared.ctx)
    infra = outcome.verdict == "infra_error"
    return GradeResult(
        reward=0.0 if infra else outcome.reward,
        seed=response.get("seed") or prepared.seed,
        seed_ack=response.get("seed_ack"),
        exit_code=exit_code if isinstance(exit_code, int) else None,
        fork_time_ms=float_or_none(response.get("fork_time_ms")),
        exec_time_ms=float_or_none(response.get("exec_time_ms")),
        raw=dict(response),
        infra_error=infra,
        verdict=outcome.verdict,
        detail=outcome.detail,
        index=index,
        error=outcome.infra_message,
    )


@dataclass(frozen=True)
class PackedGrade:
    """One candidate's grade as its pack wrote it."""

    #: the candidate's place in the pack
    position: int
    seed: str
    outcome: Outcome
    #: the seed the grader says it graded with (None: it did not say)
    seed_echo: str | None
    #: the grader's own time for this candidate
    elapsed_ms: float | None
    #: the candidate's own frame lines
    stdout: str


def _outcome(spec: GuestReward, frames: Any, own: str, ctx: Any) -> Outcome:
    if type(spec).outcome is GuestReward.outcome:  # (not made otherwise by a subclass)
        return spec.outcome_from_frames(frames, own, 0)
    return spec.outcome(own, 0, ctx)


def read_pack(prepared: PreparedPack, stdout: str) -> tuple[list[PackedGrade], str | None]:
    """The verdicts a pack wrote, each read by its candidate's own spec, and
    why the pack stopped early (None: it did not say)."""
    by_nonce: dict[str, list[str]] = {}  # frame lines, by the nonce they carry
    for line in stdout.splitlines():
        if line.startswith(VERDICT_MARKER):
            nonce = line[len(VERDICT_MARKER) :].partition(" ")[0]
            by_nonce.setdefault(nonce, []).append(line)
    grades: list[PackedGrade] = []
    for position, (spec, ctx, seed) in enumerate(
        zip(prepared.specs, prepared.contexts, prepared.seeds, strict=True)
    ):
        own = "\n".join(by_nonce.get(ctx.nonce, ()))
        frames = read_frames(own, ctx.nonce)
        if frames.verdict is None:
            continue
        outcome = _outcome(spec, frames, own, ctx)
        detail = dict(outcome.detail)
        echo = detail.pop("seed", None)
        elapsed = detail.pop("ms", None)
        grades.append(
            PackedGrade(
                position,
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


@dataclass(frozen=True)
class PackReading:
    """What a pack's answer gives: results taken, and who is left."""

    #: (position in the pack, its result) for every reward taken from the pack
    taken: list[tuple[int, GradeResult]]
    #: positions whose verdict blames the infrastructure
    blamed: list[int]
    #: why the pack stopped early, as the guest said (None: it did not say)
    note: str | None
    #: it ended on time: its exec ran out, or it stopped behind a candidate
    #: that used its whole budget
    on_time: bool = False

    @property
    def cannot_pack(self) -> bool:
        """The guest says it can never run a pack (not this pack's fault)."""
        return self.note is not None and self.note.startswith(CANNOT_PACK)

    @property
    def said_why(self) -> bool:
        """The guest stopped the pack itself, and said why (after a verdict)."""
        return self.note is not None and not self.cannot_pack


def _packed_result(
    grade: PackedGrade, job: Job, prepared: PreparedPack, response: Mapping[str, Any]
) -> GradeResult:
    outcome = grade.outcome
    raw = dict(response)
    raw["stdout"] = grade.stdout
    raw["pack"] = {"nonce": prepared.nonce, "size": len(prepared.contexts)}
    return GradeResult(
        reward=outcome.reward,
        seed=grade.seed,
        seed_ack="verified" if grade.seed_echo == grade.seed else "no-ack",
        exit_code=0,
        fork_time_ms=float_or_none(response.get("fork_time_ms")),
        exec_time_ms=grade.elapsed_ms,
        raw=raw,
        verdict=outcome.verdict,
        detail=outcome.detail,
        index=job.index,
    )


def read_pack_answer(
    jobs: Sequence[Job], prepared: PreparedPack, response: Mapping[str, Any]
) -> PackReading:
    """The results of a pack of ``jobs`` (in the order they were prepared)."""
    grades, note = read_pack(prepared, _stdout(response))
    taken: list[tuple[int, GradeResult]] = []
    blamed: list[int] = []
    for grade in grades:
        if grade.outcome.verdict == "infra_error":
            blamed.append(grade.position)
        else:
            job = jobs[grade.position]
            taken.append((grade.position, _packed_result(grade, job, prepared, response)))
    return PackReading(taken, blamed, note, _on_time(len(jobs), taken, blamed, response))


def _on_time(
    size: int,
    taken: Sequence[tuple[int, GradeResult]],
    blamed: Sequence[int],
    response: Mapping[str, Any],
) -> bool:
    """The exec ran out, or the last verdict before the first candidate
    without one is a timeout (the guest stops a pack behind a looper)."""
    if response.get("exit_code") == -1:
        return True
    written = {position: result for position, result in taken}
    first_missing = next((p for p in range(size) if p not in written and p not in blamed), None)
    before = written.get(first_missing - 1) if first_missing else None
    return before is not None and bool(before.detail.get("timeout"))
