"""The README's example, run as a reader runs it.

The grader is started as the README's Install block says (``collimate
serve``, a process of its own) and the example's Python block, taken from
the README itself, runs in a fresh interpreter with ``COLLIMATE_SERVE_URL``
exported: what it prints must be what its ``# ...`` comment says.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from collimate_rl import CollimateError
from collimate_rl.client import CollimateClient
from collimate_rl.testing.procs import stop_process
from collimate_rl.testing.readme import expected_output, python_blocks, run_snippet

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.fixture(scope="module")
def collimate_serve() -> Iterator[str]:
    """``collimate serve --port <free>`` (this environment's console script);
    its URL once it answers."""
    script = Path(sys.executable).with_name("collimate")
    if not script.exists():
        pytest.skip("the collimate console script is not installed next to this Python")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    server = subprocess.Popen(
        [str(script), "serve", "--port", str(port), "--log-level", "ERROR"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        with CollimateClient(url, timeout=2, retries=0) as client:
            while True:
                try:
                    client.health()
                    break
                except CollimateError:
                    if server.poll() is not None or time.monotonic() > deadline:
                        pytest.fail("collimate serve did not start")
                    time.sleep(0.1)
        yield url
    finally:
        stop_process(server)


def test_the_main_example_prints_the_scores_it_shows(collimate_serve: str) -> None:
    (block,) = python_blocks(README, containing="compute_score(")
    out = run_snippet(block, env={"COLLIMATE_SERVE_URL": collimate_serve})
    assert out == expected_output(block) == ["1.0 passed 1; 1/1 tests passed", "0.0 failed 0 1"]
