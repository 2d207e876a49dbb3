"""Self-sabotage by judged programs in Java and Python: a program that
damages what it was given or the processes around it never turns its own
failure into an infra error ("no signal" for the trainer, so a laundered
0.0). The catalogue and the checks are
``collimate_rl.testing.sabotage``'s (shared with the reliability table,
and split by language over test files so that several workers share the
minutes of compiles and runs)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from collimate_rl import CollimateClient
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.testing import sabotage
from collimate_rl.testing.programs import need

LANGUAGES = ("java", "python")

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


@pytest.mark.parametrize("language", LANGUAGES)
def test_each_sabotage_alone_is_the_programs_own_zero(
    client: CollimateClient, language: str
) -> None:
    need(language)
    sabotage.check_alone(client, language)


@pytest.mark.parametrize("language", LANGUAGES)
def test_sabotage_in_a_group_costs_the_siblings_nothing_and_grades_the_same_again(
    client: CollimateClient, language: str
) -> None:
    need(language)
    sabotage.check_group(client, language)


@pytest.mark.parametrize("language", LANGUAGES)
def test_tampering_with_its_own_build_or_directory_reaches_no_later_test(
    client: CollimateClient, language: str
) -> None:
    need(language)
    sabotage.check_tampering(client, language)


@pytest.mark.parametrize("language", [lang for lang in LANGUAGES if lang in sabotage.UNRUNNABLE])
def test_a_build_with_nothing_to_run_is_a_compile_error(
    client: CollimateClient, language: str
) -> None:
    need(language)
    sabotage.check_unrunnable(client, language)
