"""The README's Python examples, run as written against a real local backend.

Each fenced ``python`` block is taken from the README itself and run in a
fresh interpreter of this environment (``skyrl_gym`` registers
``collimate_code`` there through the plugin's ``.pth`` hook, as in a user's
install) with ``COLLIMATE_SERVE_URL`` set to the URL a real ``collimate serve``
printed, as a user would set it; what it prints must be what its comment says.
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

pytestmark = pytest.mark.timeout(300)

#: (a text only that block holds, what it prints)
BLOCKS = [
    ('"data_source": "mbpp"', ["1.0 passed 1; 2/2 tests passed"]),
    ('"entry_point": "double"', ["1.0 row task_id='HumanEval/double'"]),
    ('"tools": ["python"]', ["3 0.0 False", "6", "1.0 True 2.0"]),
]


@pytest.fixture(scope="module")
def served_url() -> Iterator[str]:
    """``collimate serve`` as the README's reader starts it: the URL it prints."""
    with collimate_serve(["--log-level", "ERROR"]) as url:
        yield url


def test_every_python_block_is_checked() -> None:
    assert len(python_blocks(README)) == len(BLOCKS)


@pytest.mark.parametrize(
    ("marker", "prints"), BLOCKS, ids=["mbpp-row", "humaneval-body", "python-tool"]
)
def test_the_readme_example_prints_the_reward_it_shows(
    served_url: str, marker: str, prints: list[str]
) -> None:
    (block,) = python_blocks(README, containing=marker)
    out = run_snippet(block, env={"COLLIMATE_SERVE_URL": served_url})
    assert out == expected_output(block) == prints
