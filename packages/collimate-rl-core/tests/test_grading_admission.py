"""Backpressure: the execs the SDK has in flight to a server stay within what
it admits, from threads and event loops alike, so that no number of
concurrent grades ever fails for capacity."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from collimate_rl import (
    AsyncCollimateClient,
    CollimateClient,
    CollimateError,
    RewardSpec,
    grade,
    grade_async,
)
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.pipeline import admission
from collimate_rl.pipeline.admission import Gate, gates
from collimate_rl.plugins import ExecEvent, get_plugin_manager, hookimpl
from collimate_rl.testing.faults import Script, envelope


class LastLine(RewardSpec):
    """A custom spec: every grade is an exec of its own (never packed)."""

    def build(self, candidate_path: str) -> str:
        return f"exec(open({candidate_path!r}).read())"


ONE = "print(1.0)\n"


async def settle() -> None:
    """Let every task that can run, run (loop turns, not time)."""
    for _ in range(10):
        await asyncio.sleep(0)


def test_a_gate_lets_no_more_than_its_limit_through_from_threads() -> None:
    """Each group of 3 admitted threads meets at a barrier: while they wait
    there, a fourth admitted one would be seen inside."""
    gate = Gate(3)
    meet = threading.Barrier(3, timeout=60)
    lock = threading.Lock()
    inside: list[int] = []
    seen: list[int] = []

    def work() -> None:
        gate.acquire()
        try:
            with lock:
                inside.append(1)
                seen.append(len(inside))
            meet.wait()
            with lock:
                inside.pop()
        finally:
            gate.release()

    threads = [threading.Thread(target=work) for _ in range(39)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert max(seen) == 3 and len(seen) == 39
    assert gate.inflight == 0 and gate.peak == 3


def test_a_gate_serves_waiters_in_order_and_a_cancelled_one_gives_its_turn_on() -> None:
    async def scenario() -> None:
        gate = Gate(2)
        order: list[int] = []
        holds = [asyncio.Event() for _ in range(6)]

        async def user(i: int) -> None:
            await gate.acquire_async()
            order.append(i)
            await holds[i].wait()
            gate.release()

        tasks = [asyncio.create_task(user(i)) for i in range(6)]
        await settle()
        assert order == [0, 1] and gate.inflight == 2
        tasks[2].cancel()  # waiting: it leaves the queue
        await settle()
        holds[0].set()
        await settle()
        assert order == [0, 1, 3]
        holds[1].set()
        await asyncio.sleep(0)  # 1 releases: its slot is handed to 4...
        tasks[4].cancel()  # ...which is cancelled before it wakes: it passes the slot on
        await settle()
        assert order == [0, 1, 3, 5] and gate.inflight == 2
        for h in holds:
            h.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        assert gate.inflight == 0

    asyncio.run(scenario())


def test_a_gate_learns_the_limit_from_refusals_and_from_what_the_server_says() -> None:
    gate = Gate(None)  # the server did not say
    for _ in range(5):
        gate.acquire()
    gate.refused()  # one of the five was answered at_capacity: four fit
    assert gate.limit == 4
    for _ in range(5):
        gate.release()
    for _ in range(4 * 4):
        gate.acquire()
        gate.admitted()
        gate.release()
    assert gate.limit == 5  # four limits' worth admitted in a row: one more
    gate.told(64)
    assert (gate.ceiling, gate.limit) == (64, 5)
    gate.told(3)
    assert gate.limit == 3  # never above what the server says
    full = Gate(8)
    full.told(16)
    assert full.limit == 16  # at the old ceiling: follows the new one


@pytest.fixture(scope="module")
def small() -> Iterator[LocalCollimateBackend]:
    """A backend that admits 4 execs at once (run slots: one per CPU)."""
    with LocalCollimateBackend(max_inflight=4) as b:
        yield b


class Refusals:
    """Counts the execs a server refused for capacity (the local backend
    holds a slot a little past its answer, while it wipes the clone: a
    client at the limit meets a refusal now and then, and sends again)."""

    def __init__(self) -> None:
        self.count = 0
        self.execs = 0

    @hookimpl
    def collimate_rl_after_exec(self, event: ExecEvent) -> None:
        self.execs += 1
        if isinstance(event.error, CollimateError) and event.error.error_code == "at_capacity":
            self.count += 1


@pytest.fixture
def refusals() -> Iterator[Refusals]:
    seen = Refusals()
    pm = get_plugin_manager()
    pm.register(seen, name="test-refusals")
    try:
        yield seen
    finally:
        pm.unregister(name="test-refusals")


def test_many_concurrent_grades_on_one_loop_never_meet_at_capacity(
    small: LocalCollimateBackend, refusals: Refusals
) -> None:
    """120 lone grades at once against a server admitting 4, with a client
    that never retries: each waits its turn in the SDK instead."""

    async def run() -> list[float]:
        async with AsyncCollimateClient(small.base_url, retries=0) as c:
            done = await asyncio.gather(
                *(grade_async(c, "py", ONE, LastLine(), coalesce=False) for _ in range(120))
            )
            return [r.reward for r in done]

    assert asyncio.run(run()) == [1.0] * 120
    assert refusals.execs - refusals.count == 120  # each ran once
    gate = gates.find(small.base_url)
    assert gate is not None and gate.peak <= 4


def test_many_threads_never_meet_at_capacity(
    small: LocalCollimateBackend, refusals: Refusals
) -> None:
    with CollimateClient(small.base_url, retries=0) as c:
        out: list[float] = []
        threads = [
            threading.Thread(
                target=lambda: out.append(grade(c, "py", ONE, LastLine(), coalesce=False).reward)
            )
            for _ in range(40)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert out == [1.0] * 40 and refusals.execs - refusals.count == 40


def _server(refuse: int) -> tuple[Script, Any]:
    """A server that says nothing of its limit in ``health`` and refuses
    the first ``refuse`` execs for capacity."""
    answer = httpx.Response(200, json={"stdout": "1.0\n", "exit_code": 0, "seed": "ab" * 32})
    script = Script([envelope("daemon", 503, "at_capacity")] * refuse, default=answer)

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/health":
            return httpx.Response(200, json={"status": "ok"})
        return script(request)

    return script, httpx.MockTransport(handle)


def _scripted(refuse: int) -> tuple[CollimateClient, Script, str]:
    script, transport = _server(refuse)
    url = f"http://fake-{uuid.uuid4().hex[:8]}.invalid"
    return CollimateClient(url, retries=0, httpx_transport=transport), script, url


def test_an_exec_refused_for_capacity_is_sent_again_and_the_limit_learnt() -> None:
    client, script, url = _scripted(refuse=2)
    with client:
        assert grade(client, "py", ONE, LastLine()).reward == 1.0
    assert len(script.sent("POST")) == 3  # twice refused (it did not run), then done
    gate = gates.find(url)
    assert gate is not None and gate.limit == 1  # refused at one in flight: one at a time


def test_a_server_that_stays_full_is_an_error_after_the_patience(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(admission, "CAPACITY_PATIENCE_S", 0.0)
    client, _script, _url = _scripted(refuse=1000)
    with client, pytest.raises(CollimateError) as caught:
        grade(client, "py", ONE, LastLine())
    assert caught.value.error_code == "at_capacity"


def test_the_async_path_sends_a_refused_exec_again_too() -> None:
    script, transport = _server(refuse=3)

    async def run() -> float:
        url = f"http://fake-{uuid.uuid4().hex[:8]}.invalid"
        async with AsyncCollimateClient(url, retries=0, httpx_transport=transport) as c:
            return (await grade_async(c, "py", ONE, LastLine())).reward

    assert asyncio.run(run()) == 1.0
    assert len(script.sent("POST")) == 4
