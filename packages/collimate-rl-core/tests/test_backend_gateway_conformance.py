"""The gateway wire of the REAL local backend, through core's own gateway
clients: the session-surface conformance suite (sync and async), and
``grade`` / ``grade_batch`` / ``Sandbox`` / file IO unchanged over it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from collimate_rl import (
    AsyncGatewayClient,
    GatewayClient,
    Sandbox,
    UnitTestReward,
    grade,
    grade_async,
    grade_batch,
    grade_batch_async,
)
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.testing import AsyncSessionSurfaceConformance, SessionSurfaceConformance

KEY = "col_pro_conformance_gateway"
ADD = UnitTestReward([{"input": [1, 2], "output": 3}, {"input": [2, 5], "output": 7}])
RIGHT = "def solve(a, b):\n    return a + b\n"
WRONG = "def solve(a, b):\n    return a - b\n"


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with LocalCollimateBackend(api_keys=[KEY]) as b:
        yield b


class _Py:
    @pytest.fixture
    def template_id(self) -> str:
        return "py"


class TestGatewayWireSync(_Py, SessionSurfaceConformance):
    @pytest.fixture
    def client(self, backend: LocalCollimateBackend) -> Iterator[Any]:
        with GatewayClient(KEY, backend.base_url) as c:
            yield c


class TestGatewayWireAsync(_Py, AsyncSessionSurfaceConformance):
    @pytest.fixture
    def client(self, backend: LocalCollimateBackend) -> Any:
        return AsyncGatewayClient(KEY, backend.base_url)


def test_grade_and_grade_batch_run_unchanged(backend: LocalCollimateBackend) -> None:
    with GatewayClient(KEY, backend.base_url) as client:
        assert grade(client, "py", RIGHT, ADD).reward == 1.0
        results = grade_batch(client, "py", [RIGHT, WRONG, RIGHT], ADD, concurrency=3)
        assert [r.reward for r in results] == [1.0, 0.0, 1.0]
        assert client.list_sandboxes() == []  # every one-shot sandbox was deleted


def test_async_grading_runs_unchanged(backend: LocalCollimateBackend) -> None:
    async def main() -> list[float]:
        async with AsyncGatewayClient(KEY, backend.base_url) as client:
            one = await grade_async(client, "py", RIGHT, ADD)
            batch = await grade_batch_async(client, "py", [WRONG, RIGHT], ADD)
            assert await client.list_sandboxes() == []
            return [one.reward, *(r.reward for r in batch)]

    assert asyncio.run(main()) == [1.0, 0.0, 1.0]


def test_sandbox_and_file_io_run_unchanged(backend: LocalCollimateBackend) -> None:
    payload = bytes(range(256)) * 64 + b"\x00tail"
    with GatewayClient(KEY, backend.base_url) as client:
        with Sandbox("py", client=client) as sb:
            sb.upload_bytes("blob.bin", payload)
            assert sb.download("blob.bin") == payload
            out = sb.exec(command="wc -c < blob.bin")
            assert out.stdout.strip() == str(len(payload))
            sid = sb.session_id
            assert sid in {s["id"] for s in client.list_sandboxes()}
        assert sid not in {s["id"] for s in client.list_sandboxes()}
