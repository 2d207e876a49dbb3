"""Self-sabotage by judged programs, in every language: a program that
damages what it was given or the processes around it must never turn its
own failure into an infra error (an infra error is "no signal" to the
trainer, so it would launder a 0.0).

Each sabotage answers wrong after doing its damage, so it is due 0.0 with
a verdict, alone and beside right siblings (who keep 1.0); the same group
graded again (through the compile cache) gets the same verdicts; a fresh
group after it grades 8/8. Sabotages that also answer right show that
nothing a run does to its build or its directory reaches its next test.

The catalogue: tampering with its own build output (unlink, chmod,
overwrite) and run directory (chmod 0, removed), builds that yield nothing
runnable, exec tricks, signals to itself, its parent (the runner), its
group and everything it can see, closed descriptors, lowered rlimits, a
filled disk, memory and process quotas, sleepers left behind, and a
lowered priority (a starved run would be the machine's failure). A
language that cannot express a case natively (Java and Node have no
``setrlimit`` or ``exec``) leaves it out.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from collimate_rl import CollimateClient, ContestReward, GradeResult, grade, grade_batch
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.testing.programs import need
from collimate_rl.testing.sabotage import (
    CATALOGUE,
    TAMPER_THEN_RIGHT,
    TESTS,
    UNRUNNABLE,
    right,
    wrong,
)

#: minutes of compiles and runs: started first (see the repository's conftest.py)
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with LocalCollimateBackend() as b:
        yield b


@pytest.fixture(scope="module")
def client(backend: LocalCollimateBackend) -> Iterator[CollimateClient]:
    with CollimateClient(backend.base_url, timeout=900) as c:
        yield c


def _spec(language: str) -> ContestReward:
    return ContestReward(TESTS, language=language, time_limit=1, memory_limit_mb=256)


def _verdicts(results: list[GradeResult]) -> list[tuple[float, str | None, bool]]:
    return [(r.reward, r.verdict, r.infra_error) for r in results]


@pytest.mark.parametrize("language", list(CATALOGUE))
def test_each_sabotage_alone_is_the_programs_own_zero(
    client: CollimateClient, language: str
) -> None:
    need(language)
    spec = _spec(language)
    for case, sabotage in CATALOGUE[language].items():
        result = grade(client, "py", wrong(language, sabotage), spec)
        assert (result.reward, result.infra_error) == (0.0, False), (case, result.explain())
        assert result.verdict, case


@pytest.mark.parametrize("language", list(CATALOGUE))
def test_sabotage_in_a_group_costs_the_siblings_nothing_and_grades_the_same_again(
    client: CollimateClient, language: str
) -> None:
    need(language)
    spec = _spec(language)
    good = right(language)
    cases = list(CATALOGUE[language])
    group = [good]
    for case in cases:
        group += [wrong(language, CATALOGUE[language][case]), good]
    first = grade_batch(client, "py", group, spec)
    expected = [1.0] + [0.0, 1.0] * len(cases)
    assert [r.reward for r in first] == expected, [
        (c, r.explain()) for c, r in zip(["right", *[x for c in cases for x in (c, "right")]],
                                         first, strict=True) if r.infra_error or r.reward != 1.0
    ]  # fmt: skip
    assert not any(r.infra_error for r in first)
    # the same candidates again: their builds come from the compile cache
    again = grade_batch(client, "py", group, spec)
    assert _verdicts(again) == _verdicts(first)
    fresh = grade_batch(client, "py", [good] * 8, spec)
    assert [r.reward for r in fresh] == [1.0] * 8


@pytest.mark.parametrize("language", list(CATALOGUE))
def test_tampering_with_its_own_build_or_directory_reaches_no_later_test(
    client: CollimateClient, language: str
) -> None:
    need(language)
    spec = _spec(language)
    # (a JVM loads classes from its class path as it goes: a run that removes
    # its whole directory breaks itself, in every test alike)
    cases = [c for c in TAMPER_THEN_RIGHT if (language, c) != ("java", "remove_dir")]
    group = [right(language, CATALOGUE[language][c]) for c in cases]
    # each twice: a sibling with the same source, then the same group again
    # through the compile cache, sees exactly what the first did
    group += group
    first = grade_batch(client, "py", group, spec)
    for case, result in zip(cases + cases, first, strict=True):
        assert (result.reward, result.infra_error) == (1.0, False), (case, result.explain())
        assert result.detail.get("passed") == len(TESTS), (case, result.detail)
    assert _verdicts(grade_batch(client, "py", group, spec)) == _verdicts(first)


@pytest.mark.parametrize("language", list(UNRUNNABLE))
def test_a_build_with_nothing_to_run_is_a_compile_error(
    client: CollimateClient, language: str
) -> None:
    need(language)
    result = grade(client, "py", UNRUNNABLE[language], _spec(language))
    assert (result.reward, result.infra_error) == (0.0, False), result.explain()
    assert "compile_error" in result.explain()
