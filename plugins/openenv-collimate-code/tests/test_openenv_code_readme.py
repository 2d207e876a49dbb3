"""The README's example, run as written against a real local backend.

The block is taken from the README itself and run in a fresh interpreter
of this environment with ``COLLIMATE_SERVE_URL`` set to the URL a real
``collimate serve`` printed, as a user would set it: ``AutoEnv`` finds the
installed environment, the provider starts its server in a session of the
backend (the ``collimate-code-env`` template of ``collimate-rl-openenv``),
and what the block prints must be what its comment says.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterator
from pathlib import Path

import pytest

from collimate_rl import connect
from collimate_rl.testing.readme import (
    collimate_serve,
    expected_output,
    python_blocks,
    run_snippet,
)

README = Path(__file__).resolve().parents[1] / "README.md"

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def served_url() -> Iterator[str]:
    """``collimate serve`` as the README's reader starts it: the URL it prints."""
    with collimate_serve(["--log-level", "ERROR"]) as url:
        yield url


def test_the_readme_example_prints_the_reward_it_shows(served_url: str) -> None:
    try:
        importlib.metadata.version("openenv")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the example is openenv 0.10's (openenv-core 0.3's client is async only)")
    (block,) = python_blocks(README)
    out = run_snippet(block, env={"COLLIMATE_SERVE_URL": served_url})
    assert out == expected_output(block) == ["1.0 [{'index': 0, 'passed': True}]"]
    assert connect(served_url).list_sessions() == []  # close() ended the session
