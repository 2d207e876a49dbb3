"""The README's example, run as a reader runs it.

The grader is started as the README's Install block says (``collimate
serve``, a process of its own) and the example's Python block, taken from
the README itself, runs in a fresh interpreter with ``COLLIMATE_SERVE_URL``
exported: what it prints must be what its ``# ...`` comment says.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from collimate_rl.testing.readme import (
    collimate_serve,
    expected_output,
    python_blocks,
    run_snippet,
)

README = Path(__file__).resolve().parents[1] / "README.md"

pytest.importorskip("datasets")


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    """``collimate serve`` (this environment's console script), its URL."""
    with collimate_serve(["--log-level", "ERROR"]) as url:
        yield url


def test_the_main_example_prints_the_rewards_it_shows(served: str) -> None:
    (block,) = python_blocks(README, containing="CollimateReward(")
    out = run_snippet(block, env={"COLLIMATE_SERVE_URL": served})
    assert out == expected_output(block) == ["[1.0, 0.0]"]


def test_the_environment_example_prints_what_it_shows(served: str) -> None:
    (block,) = python_blocks(README, containing="CodeEnvironment(")
    out = run_snippet(block, env={"COLLIMATE_SERVE_URL": served})
    assert out == expected_output(block)
    assert out[-1] == "1.0"
