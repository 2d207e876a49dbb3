"""The first grade of a kind on an event loop builds its grader program in a
thread: building costs a few hundred milliseconds of CPU once per process,
which a loop running a rollout (slime's, verl's) must not stall for."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from collimate_rl import AsyncCollimateClient, UnitTestReward, grade_async, grade_batch_async
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.pipeline import run as run_module
from collimate_rl.rewards import program

SPEC = UnitTestReward(tests=[{"input": [2], "output": 4}], entry="double")
RIGHT = "def double(x):\n    return 2 * x\n"


def forget_every_runtime() -> None:
    """Every built runtime block, forgotten."""
    with program._BUILD_LOCK:
        program._BLOCKS.clear()


@pytest.fixture
def cold(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every runtime block forgotten; where each build runs, recorded."""
    forget_every_runtime()
    threads: list[str] = []
    real = program.build_runtime

    def recording(kind: str | None, form: str, packed: bool) -> None:
        threads.append(threading.current_thread().name)
        real(kind, form, packed)

    monkeypatch.setattr(run_module, "build_runtime", recording)
    yield threads
    forget_every_runtime()


def test_the_first_grade_on_a_loop_builds_its_program_off_the_loop(cold: list[str]) -> None:
    with LocalCollimateBackend() as backend:

        async def main() -> tuple[float, str]:
            loop_thread = threading.current_thread().name
            async with AsyncCollimateClient(backend.base_url) as client:
                result = await grade_async(client, "py", RIGHT, SPEC, coalesce=False)
                assert program.runtime_built("unit", "full", False)
                for _ in range(3):
                    again = await grade_async(client, "py", RIGHT, SPEC, coalesce=False)
                    assert again.reward == 1.0
            return result.reward, loop_thread

        reward, loop_thread = asyncio.run(main())
    assert reward == 1.0
    # built off the loop: once in full, once more in the shorter form the
    # backend said it runs (a preloaded or bytecode runtime), then cached
    assert 1 <= len(cold) <= 2
    assert loop_thread not in cold


def test_a_pack_is_built_off_the_loop_too(cold: list[str]) -> None:
    with LocalCollimateBackend() as backend:

        async def main() -> list[float]:
            async with AsyncCollimateClient(backend.base_url) as client:
                results = await grade_batch_async(client, "py", [RIGHT] * 6, SPEC, pack=6)
            return [r.reward for r in results]

        assert asyncio.run(main()) == [1.0] * 6
    assert cold and all(name != "MainThread" for name in cold)
