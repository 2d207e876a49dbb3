"""The README's example, run as written against a real local backend.

The block is taken from the README itself and run in a fresh interpreter
of this environment with ``COLLIMATE_SERVE_URL`` set, as a user would after
``collimate serve``: ``AutoEnv`` finds the installed environment, the
provider starts its server in a session of the backend (the
``collimate-code-env`` template of ``collimate-rl-openenv``), and what the
block prints must be what its comment says.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterator
from pathlib import Path

import pytest

from collimate_rl import connect
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.testing.readme import expected_output, python_blocks, run_snippet

README = Path(__file__).resolve().parents[1] / "README.md"

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def served() -> Iterator[LocalCollimateBackend]:
    with LocalCollimateBackend() as b:
        yield b


def test_the_readme_example_prints_the_reward_it_shows(served: LocalCollimateBackend) -> None:
    try:
        importlib.metadata.version("openenv")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the example is openenv 0.10's (openenv-core 0.3's client is async only)")
    (block,) = python_blocks(README)
    out = run_snippet(block, env={"COLLIMATE_SERVE_URL": served.base_url})
    assert out == expected_output(block) == ["1.0 [{'index': 0, 'passed': True}]"]
    assert connect(served.base_url).list_sessions() == []  # close() ended the session
