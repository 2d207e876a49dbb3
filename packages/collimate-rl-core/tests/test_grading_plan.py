"""Planning the units of a grade (step 1 of the pipeline), without a backend:
pack sizes from what the target says, packs across prompts, and what
becomes of the candidates a pack did not grade."""

from __future__ import annotations

import random

import pytest

from collimate_rl import PropertyReward, RewardSpec, StdioReward, UnitTestReward
from collimate_rl.pipeline.plan import (
    MAX_AUTO_PACK,
    MAX_REPACKS,
    Job,
    Unit,
    check_pack,
    follow_up,
    pack_size,
    plan_units,
)
from collimate_rl.pipeline.targets import TargetFacts, facts_from_health

UNIT = UnitTestReward([{"input": [1], "output": 1}])
PROP = PropertyReward(reference="    return x", generator="random.randint(0, 9)", k=2)
STDIO = StdioReward([{"input": "1\n", "output": "1"}])


class LastLine(RewardSpec):
    def build(self, candidate_path: str) -> str:
        return "print(1.0)"


def jobs(*specs: RewardSpec) -> list[Job]:
    return [Job(i, f"# {i}\n", spec, None) for i, spec in enumerate(specs)]


def indices(units: list[Unit]) -> list[list[int]]:
    return [[j.index for j in u.jobs] for u in units]


def test_auto_is_one_pack_per_slot_of_the_target_within_concurrency() -> None:
    two = TargetFacts(slots=2, max_inflight=64)
    assert pack_size("auto", 256, two, 16) == 128  # 256 on 2 CPUs: 2 x 128
    assert pack_size("auto", 100, two, 16) == 50
    assert pack_size("auto", 256, two, 1) == MAX_AUTO_PACK  # (one exec at a time)
    assert pack_size("auto", 4096, two, 16) == MAX_AUTO_PACK
    assert pack_size("auto", 1, two, 16) == 1
    # a target that does not say: one pack per exec allowed in flight
    assert pack_size("auto", 256, TargetFacts(), 16) == 16
    assert pack_size("auto", 256, TargetFacts(slots=8), 4) == 64
    # asked for explicitly, or off
    assert pack_size(32, 256, two, 16) == 32
    assert pack_size(1, 256, two, 16) == pack_size(None, 256, two, 16) == 1


def test_the_target_facts_come_from_health() -> None:
    assert facts_from_health({"run_slots": 2, "max_inflight": 64}) == TargetFacts(2, 64)
    # 0 means unpaced / unlimited: the target did not bound it
    assert facts_from_health({"run_slots": 0, "max_inflight": 0}) == TargetFacts()
    assert facts_from_health({"status": "ok", "run_slots": True}) == TargetFacts()


@pytest.mark.parametrize("bad", [0, -2, True, "4", 2.0, "AUTO"])
def test_a_bad_pack_argument_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="pack must be 'auto', None or an int >= 1"):
        check_pack(bad)


def test_packs_are_balanced_cross_prompts_and_keep_a_prompts_candidates_together() -> None:
    # two prompts, their candidates interleaved as a trainer may list them
    batch = jobs(UNIT, PROP, UNIT, PROP, UNIT, PROP, UNIT, PROP, UNIT)
    units = plan_units(batch, 4, None)
    assert [len(u.jobs) for u in units] == [3, 3, 3]  # 9 at 4: 3 + 3 + 3, not 4 + 4 + 1
    flat = [j for u in units for j in u.jobs]
    assert [j.spec for j in flat] == [UNIT] * 5 + [PROP] * 4  # each prompt's together
    assert {j.spec for j in units[1].jobs} == {UNIT, PROP}  # a pack across two prompts


def test_what_cannot_share_an_exec_goes_alone() -> None:
    batch = jobs(UNIT, LastLine(), UNIT, STDIO)
    units = plan_units(batch, 8, None)
    assert indices(units) == [[0, 2, 3], [1]]  # (packs first: the longest execs start first)
    assert indices(plan_units(batch, 8, "session-1")) == [[0], [1], [2], [3]]
    assert indices(plan_units(batch, 1, None)) == [[0], [1], [2], [3]]
    assert indices(plan_units(jobs(UNIT, LastLine()), 8, None)) == [[0], [1]]


def pack_of(n: int) -> Unit:
    return Unit(tuple(jobs(*[UNIT] * n)))


def test_a_pack_that_graded_everyone_leaves_nothing_but_infra_blames_alone() -> None:
    unit = pack_of(4)
    assert follow_up(unit, [0, 1, 2, 3], []) == []
    assert indices(follow_up(unit, [0, 2, 3], [1])) == [[1]]


def test_where_a_pack_died_that_candidate_goes_alone_and_the_rest_are_repacked() -> None:
    """The grader was killed (or stopped) while grading candidate 2: it
    goes alone, 3 and 4 go on in a new pack."""
    unit = pack_of(5)
    assert indices(follow_up(unit, [0, 1], [])) == [[3, 4], [2]]
    # the first candidate killed it: the others still get a pack
    assert indices(follow_up(unit, [], [])) == [[1, 2, 3, 4], [0]]


def test_a_pack_the_guest_stopped_itself_is_repacked_whole() -> None:
    """After a verdict (a trace left, a candidate out of time), the guest
    says why it stops: nobody left is to blame."""
    unit = pack_of(5)
    assert indices(follow_up(unit, [0, 1], [], said_why=True)) == [[2, 3, 4]]
    # ...unless it said so without a verdict: then the first is suspect again
    assert indices(follow_up(unit, [], [], said_why=True)) == [[1, 2, 3, 4], [0]]


def test_a_pack_that_ended_on_time_is_repacked_as_two_side_by_side() -> None:
    unit = pack_of(8)
    assert indices(follow_up(unit, [0, 1], [], said_why=True, on_time=True)) == [
        [2, 3, 4],
        [5, 6, 7],
    ]
    assert indices(follow_up(pack_of(4), [0, 1], [], said_why=True, on_time=True)) == [[2], [3]]


def test_a_guest_that_cannot_pack_sends_everyone_left_alone() -> None:
    unit = pack_of(3)
    assert indices(follow_up(unit, [], [], said_why=True, cannot_pack=True)) == [[0], [1], [2]]


def test_two_packs_that_wrote_nothing_send_a_candidate_alone() -> None:
    first = follow_up(pack_of(4), [], [])
    assert indices(first) == [[1, 2, 3], [0]]
    second = follow_up(first[0], [], [])  # the re-pack wrote nothing either
    assert indices(second) == [[1], [2], [3]]


def test_a_candidate_is_repacked_a_bounded_number_of_times() -> None:
    unit = pack_of(2 + MAX_REPACKS + 1)
    for _ in range(MAX_REPACKS):
        unit = follow_up(unit, [0], [], said_why=True)[0]  # one verdict per round
    assert [j.rounds for j in unit.jobs] == [MAX_REPACKS] * len(unit.jobs)
    assert all(not u.packed for u in follow_up(unit, [0], [], said_why=True))


def test_repacking_always_ends_whatever_the_packs_do() -> None:
    """Adversarial packs (random verdicts, notes, deaths, timeouts): every
    candidate ends graded by a pack or alone, within a bounded number of
    execs, and none is graded twice."""
    rng = random.Random(7)
    for _ in range(300):
        size = rng.randint(2, 40)
        pending = [pack_of(size)]
        graded: list[int] = []
        execs = 0
        while pending:
            unit = pending.pop()
            execs += 1
            assert execs <= 4 * size + 4
            if not unit.packed:
                graded.append(unit.jobs[0].index)
                continue
            stop = rng.randint(0, len(unit.jobs))  # the pack wrote verdicts up to here
            taken = [i for i in range(stop) if rng.random() < 0.9]
            blamed = [i for i in range(stop) if i not in taken]
            graded += [unit.jobs[i].index for i in taken]
            pending += follow_up(
                unit,
                taken,
                blamed,
                said_why=rng.random() < 0.5,
                on_time=rng.random() < 0.3,
                cannot_pack=rng.random() < 0.02,
            )
        assert sorted(graded) == list(range(size))
