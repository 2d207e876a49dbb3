"""Step 1: plan the units. Which candidates are graded alone, which
together (a *pack*: one exec grading many candidates, one after another,
each as it would be graded alone), and what becomes of the candidates a
pack did not grade.

Packs are made across prompts: a training step's candidates, each with
its own spec, are chunked in their order (a prompt's candidates stay
together), into packs of balanced sizes. ``pack="auto"`` (the default)
sizes them from the target: one pack per exec the target runs at once
(the local backend says ``run_slots``, one per CPU), within
``concurrency``, at most :data:`MAX_AUTO_PACK` candidates each. On the
local backend that was fastest: 256 candidates on 2 CPUs go as 2 packs of
128. ``pack=N`` asks for packs of ``N``; ``pack=1`` (or ``None``) grades
every candidate alone. A custom :class:`~collimate_rl.RewardSpec` (its
program grades one candidate) and a warm session (the sweep between two
candidates would remove its other execs' files) always grade alone.

What a pack did not grade (see :func:`follow_up`): the candidates whose
verdict blames the infrastructure go alone, so they meet a lone grade's
failure semantics exactly; those without a verdict are re-packed, except
the one the pack died on (its exec out of time, its grader gone), which
goes alone. Every round takes at least one candidate out of packing (a
verdict written, or the one it died on), so re-packing ends; a candidate
in two packs that wrote no verdict at all, or re-packed
:data:`MAX_REPACKS` times, goes alone. Nothing a candidate does
turns packing off: only a guest that says it can never pack (a
``cannot pack: `` note) sends its target's candidates alone, and only that
target's (see :mod:`.targets`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from ..rewards.contest import JudgedReward
from ..rewards.spec import GuestReward, RewardSpec
from .targets import TargetFacts

__all__ = [
    "MAX_AUTO_PACK",
    "MAX_REPACKS",
    "Job",
    "PackArg",
    "Unit",
    "check_pack",
    "chunk",
    "follow_up",
    "judged",
    "pack_size",
    "packable",
    "plan_units",
    "singles",
]

PackArg = int | Literal["auto"] | None

#: The largest pack ``pack="auto"`` makes (256 candidates on 2 CPUs: 2 x 128).
MAX_AUTO_PACK: Final = 128
#: Times a candidate is re-packed after packs that did not grade it, before
#: it is graded alone (bounds how long a hostile group keeps it waiting).
MAX_REPACKS: Final = 4
#: Packs that wrote no verdict at all a candidate may be in, before it goes alone.
NO_VERDICT_STRIKES: Final = 2


@dataclass(eq=False)
class Job:
    """One candidate to grade: its place in the caller's batch, its code,
    its spec and its seed, and what packing has cost it so far."""

    index: int
    candidate: str
    spec: RewardSpec
    seed: str | None
    #: times it was re-packed after a pack that did not grade it
    rounds: int = 0
    #: packs it was in that wrote no verdict at all
    strikes: int = 0


@dataclass(frozen=True)
class Unit:
    """The candidates of one exec: one (alone) or several (a pack)."""

    jobs: tuple[Job, ...]

    @property
    def packed(self) -> bool:
        return len(self.jobs) > 1


def check_pack(pack: object) -> None:
    """``pack`` is ``"auto"``, ``None`` or an int >= 1 (else ValueError)."""
    if pack is None or pack == "auto":
        return
    if isinstance(pack, bool) or not isinstance(pack, int) or pack < 1:
        raise ValueError(f"pack must be 'auto', None or an int >= 1, got {pack!r}")


def packable(spec: RewardSpec, session_id: str | None) -> bool:
    """Whether a candidate of ``spec`` may share an exec: a built-in grader
    (its runtime grades packs), never in a warm session; or a judged one
    (a :class:`~collimate_rl.ContestReward` or
    :class:`~collimate_rl.ProgramReward`: its packs are one judge
    request for the server, which gives each candidate a clone of its own)."""
    if isinstance(spec, JudgedReward):
        return True
    return isinstance(spec, GuestReward) and session_id is None


def judged(unit: Unit) -> bool:
    """Whether ``unit`` is judged by the server (``/v1/judge``), not run."""
    return isinstance(unit.jobs[0].spec, JudgedReward)


def pack_size(pack: PackArg, count: int, facts: TargetFacts, concurrency: int) -> int:
    """Candidates per pack for ``count`` packable candidates (1: alone).
    ``"auto"``: one pack per exec the target runs at once (its ``slots``,
    else ``concurrency``), within ``concurrency``, at most
    :data:`MAX_AUTO_PACK`."""
    if pack is None:
        return 1
    if pack != "auto":
        return pack
    execs = max(1, min(concurrency, facts.slots or concurrency))
    return max(1, min(MAX_AUTO_PACK, -(-count // execs)))


def _by_spec(jobs: Sequence[Job]) -> list[list[Job]]:
    """``jobs`` grouped by spec (the same object), groups in order of first
    appearance, each in the jobs' order."""
    groups: dict[int, list[Job]] = {}
    for job in jobs:
        groups.setdefault(id(job.spec), []).append(job)
    return list(groups.values())


def _balanced(jobs: Sequence[Job], size: int) -> list[Unit]:
    if not jobs:
        return []
    count = -(-len(jobs) // size)
    base, extra = divmod(len(jobs), count)
    units: list[Unit] = []
    at = 0
    for i in range(count):
        width = base + (1 if i < extra else 0)
        units.append(Unit(tuple(jobs[at : at + width])))
        at += width
    return units


def chunk(jobs: Sequence[Job], size: int) -> list[Unit]:
    """``jobs`` in units of at most ``size``, sizes balanced (130 at 128:
    65 + 65, not 128 + 2), a spec's candidates kept together (a pack may
    carry several specs: one per prompt)."""
    return _balanced([job for group in _by_spec(jobs) for job in group], max(1, size))


def singles(jobs: Iterable[Job]) -> list[Unit]:
    """Each job in a unit of its own."""
    return [Unit((job,)) for job in jobs]


def plan_units(jobs: Sequence[Job], size: int, session_id: str | None) -> list[Unit]:
    """A batch's units: its packable candidates in packs of at most ``size``
    (first: the longest execs start first), the others alone."""
    together = [j for j in jobs if packable(j.spec, session_id)] if size > 1 else []
    # judged and run candidates never share a unit (one is a judge request,
    # the other an exec)
    judge = [j for j in together if isinstance(j.spec, JudgedReward)]
    run = [j for j in together if not isinstance(j.spec, JudgedReward)]
    packs = [u for part in (run, judge) if len(part) > 1 for u in chunk(part, size)]
    packed = {id(j) for u in packs for j in u.jobs}
    return packs + singles(j for j in jobs if id(j) not in packed)


def _halves(jobs: list[Job]) -> list[list[Job]]:
    mid = -(-len(jobs) // 2)
    return [jobs[:mid], jobs[mid:]]


def follow_up(
    unit: Unit,
    taken: Iterable[int],
    blamed: Iterable[int],
    *,
    said_why: bool = False,
    on_time: bool = False,
    cannot_pack: bool = False,
) -> list[Unit]:
    """The units that grade what a pack left.

    ``taken``: positions in ``unit`` whose reward came from the pack;
    ``blamed``: positions whose verdict blames the infrastructure (graded
    alone: there they meet a lone grade's failure semantics). The rest
    have no verdict. If the guest ``said_why`` it stopped (a trace it could
    not sweep, a candidate out of its time, spawners killed again and
    again) after writing verdicts, it stopped after its last verdict and
    they are all re-packed. Otherwise the pack died (its grader killed or
    stopped, its exec out of time) while grading the first of them: that
    one goes alone, the others are re-packed. A pack that ended ``on_time``
    (a candidate used its whole budget, or the exec ran out) is re-packed
    as two, side by side, so that the loopers left among its candidates
    wait for each other half as long. A candidate that has been in two
    packs that wrote nothing, or re-packed :data:`MAX_REPACKS` times, goes
    alone. ``cannot_pack``: the guest can never pack; all go alone.
    """
    done = set(taken)
    infra = sorted(set(blamed) - done)
    alone = [unit.jobs[i] for i in infra]
    missing = [job for i, job in enumerate(unit.jobs) if i not in done and i not in infra]
    if cannot_pack or not missing:
        return singles(alone + missing)
    wrote_any = bool(done or infra)
    if not (said_why and wrote_any):
        alone.append(missing.pop(0))  # where the pack died
    again: list[Job] = []
    for job in missing:
        job.rounds += 1
        job.strikes += 0 if wrote_any else 1
        if job.strikes >= NO_VERDICT_STRIKES or job.rounds > MAX_REPACKS:
            alone.append(job)
        else:
            again.append(job)
    groups = _halves(again) if on_time else [again]
    repack = [Unit(tuple(g)) for g in groups if len(g) > 1]
    return repack + singles([j for g in groups if len(g) == 1 for j in g] + alone)
