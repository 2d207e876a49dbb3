"""The README's Mode A examples, run as written against a real local backend.

Each block is taken from the README itself and run in a fresh interpreter
with ``COLLIMATE_SERVE_URL`` set, as a user would after ``collimate serve``;
what it prints must be what its comment says.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from collimate_rl import connect
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.testing.readme import expected_output, python_blocks, run_snippet

README = Path(__file__).resolve().parents[1] / "README.md"

pytestmark = pytest.mark.usefixtures("openenv_line")


def _block(marker: str) -> str:
    (block,) = python_blocks(README, containing=marker)
    return block


def test_the_sync_example_prints_what_it_shows(
    backend: LocalCollimateBackend, openenv_line: str
) -> None:
    if openenv_line != "0.10":
        pytest.skip("the sync example is openenv 0.10's (openenv-core 0.3 is async only)")
    block = _block(".sync()")
    out = run_snippet(block, env={"COLLIMATE_SERVE_URL": backend.base_url})
    assert out == expected_output(block) == ["1.0 3 3"]
    assert connect(backend.base_url).list_sessions() == []


def test_the_async_example_prints_what_it_shows(backend: LocalCollimateBackend) -> None:
    block = _block("asyncio.run(main())")
    out = run_snippet(block, env={"COLLIMATE_SERVE_URL": backend.base_url})
    assert out == expected_output(block) == ["0.0 0 3"]
    assert connect(backend.base_url).list_sessions() == []
