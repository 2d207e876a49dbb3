"""The run queue that paces one-shots to the CPUs (``local_backend.run_queue``):
its turns, their order, cancellation, and the extra turn an idle CPU gives;
then the same queue inside a real server."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import httpx
import pytest

from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.local_backend.config import ServerConfig
from collimate_rl.local_backend.run_queue import (
    RunQueue,
    runnable_tasks,
    usable_cpu_ids,
    usable_cpus,
)

BUSY: Callable[[], int | None] = lambda: 99  # noqa: E731 - every CPU taken
IDLE: Callable[[], int | None] = lambda: 1  # noqa: E731 - only the server itself runs


async def _hold(queue: RunQueue, name: str, log: list[str], release: asyncio.Event) -> None:
    async with queue.turn():
        log.append(name)
        await release.wait()


async def _until(pred: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not pred():
        assert time.monotonic() < deadline, "condition never held"
        await asyncio.sleep(0.001)


class Looks:
    """A load reading that counts how often the queue looked."""

    def __init__(self, load: int | None) -> None:
        self.load = load
        self.count = 0

    def __call__(self) -> int | None:
        self.count += 1
        return self.load


def test_at_most_slots_turns_then_first_come_first_served() -> None:
    async def main() -> None:
        looks = Looks(99)  # every CPU taken
        queue = RunQueue(2, cpus=2, load=looks)
        log: list[str] = []
        gates = {n: asyncio.Event() for n in "abcdef"}
        tasks = []
        for name in "abcdef":
            tasks.append(asyncio.create_task(_hold(queue, name, log, gates[name])))
            await asyncio.sleep(0)  # arrival order = creation order
        await _until(lambda: len(log) == 2)
        seen = looks.count
        await _until(lambda: looks.count >= seen + 5)  # polls find every CPU busy: nobody gets in
        assert log == ["a", "b"] and queue.running == 2 and queue.waiting == 4
        gates["b"].set()
        await _until(lambda: log == ["a", "b", "c"])
        assert queue.running == 2
        gates["a"].set()
        await _until(lambda: log == ["a", "b", "c", "d"])
        assert queue.running == 2
        for gate in gates.values():
            gate.set()
        await asyncio.gather(*tasks)
        assert log == list("abcdef") and queue.running == 0 and queue.waiting == 0

    asyncio.run(main())


def test_zero_slots_never_waits() -> None:
    async def main() -> None:
        queue = RunQueue(0, load=BUSY)
        log: list[str] = []
        release = asyncio.Event()
        tasks = [asyncio.create_task(_hold(queue, str(i), log, release)) for i in range(10)]
        await _until(lambda: len(log) == 10)
        assert queue.running == 10 and queue.waiting == 0
        release.set()
        await asyncio.gather(*tasks)

    asyncio.run(main())


def test_a_waiter_cancelled_in_line_takes_no_turn() -> None:
    async def main() -> None:
        queue = RunQueue(1, cpus=1, load=BUSY)
        log: list[str] = []
        first, never, last = asyncio.Event(), asyncio.Event(), asyncio.Event()
        holder = asyncio.create_task(_hold(queue, "holder", log, first))
        await _until(lambda: log == ["holder"])
        gone = asyncio.create_task(_hold(queue, "gone", log, never))
        after = asyncio.create_task(_hold(queue, "after", log, last))
        await _until(lambda: queue.waiting == 2)
        gone.cancel()
        with pytest.raises(asyncio.CancelledError):
            await gone
        assert queue.waiting == 1
        first.set()
        await _until(lambda: log == ["holder", "after"])
        last.set()
        await asyncio.gather(holder, after)
        assert queue.running == 0 and queue.waiting == 0

    asyncio.run(main())


def test_a_waiter_cancelled_as_it_is_let_in_passes_its_turn_on() -> None:
    async def main() -> None:
        queue = RunQueue(1, cpus=1, load=BUSY)
        log: list[str] = []
        never, last = asyncio.Event(), asyncio.Event()
        held = queue.turn()
        await held.__aenter__()
        unlucky = asyncio.create_task(_hold(queue, "unlucky", log, never))
        after = asyncio.create_task(_hold(queue, "after", log, last))
        await _until(lambda: queue.waiting == 2)
        await held.__aexit__(None, None, None)  # lets "unlucky" in...
        unlucky.cancel()  # ...which is cancelled before it could run
        with pytest.raises(asyncio.CancelledError):
            await unlucky
        await _until(lambda: log == ["after"])
        assert queue.running == 1
        last.set()
        await after
        assert queue.running == 0 and queue.waiting == 0

    asyncio.run(main())


def test_an_idle_cpu_lets_the_next_one_in_beyond_the_slots() -> None:
    async def main() -> None:
        queue = RunQueue(1, cpus=2, poll_s=0.002, load=IDLE)
        log: list[str] = []
        release = asyncio.Event()
        tasks = [asyncio.create_task(_hold(queue, n, log, release)) for n in "abc"]
        # nobody leaves, yet the two waiters get in: the CPUs stay idle
        await _until(lambda: len(log) == 3)
        assert log == ["a", "b", "c"] and queue.running == 3
        release.set()
        await asyncio.gather(*tasks)

    asyncio.run(main())


def test_without_a_load_reading_the_slots_are_the_limit() -> None:
    async def main() -> None:
        looks = Looks(None)
        queue = RunQueue(1, cpus=2, poll_s=0.002, load=looks)
        log: list[str] = []
        release = asyncio.Event()
        tasks = [asyncio.create_task(_hold(queue, n, log, release)) for n in "ab"]
        await _until(lambda: log == ["a"])
        seen = looks.count
        await _until(lambda: looks.count >= seen + 50)  # fifty polls
        assert log == ["a"] and queue.waiting == 1
        release.set()
        await asyncio.gather(*tasks)
        assert log == ["a", "b"]

    asyncio.run(main())


def test_each_paced_turn_owns_a_cpu_of_its_own_while_one_is_free() -> None:
    async def main() -> None:
        queue = RunQueue(2, cpus=2, cpu_ids=[5, 3], poll_s=0.002, load=IDLE)
        owned: dict[str, int | None] = {}
        gates = {n: asyncio.Event() for n in "abc"}

        async def hold(name: str) -> None:
            async with queue.turn() as cpu:
                owned[name] = cpu
                await gates[name].wait()

        tasks = {n: asyncio.create_task(hold(n)) for n in "ab"}
        await _until(lambda: len(owned) == 2)
        assert owned == {"a": 3, "b": 5}
        tasks["c"] = asyncio.create_task(hold("c"))  # an extra turn: the CPUs idle
        await _until(lambda: "c" in owned)
        assert owned["c"] is None
        gates["a"].set()
        await tasks["a"]
        del owned["a"]
        tasks["a"] = asyncio.create_task(hold("a"))  # gets the CPU "a" gave back
        await _until(lambda: "a" in owned)
        assert owned["a"] == 3
        for gate in gates.values():
            gate.set()
        await asyncio.gather(*tasks.values())

    asyncio.run(main())


def test_an_unpaced_queue_hands_out_no_cpu() -> None:
    async def main() -> None:
        async with RunQueue(0).turn() as cpu:
            assert cpu is None

    asyncio.run(main())


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="run slots"):
        RunQueue(-1)
    with pytest.raises(ValueError, match="poll_s"):
        RunQueue(1, poll_s=0)
    with pytest.raises(ValueError, match="run_slots"):
        ServerConfig(run_slots=-2)


def test_this_kernel_reports_runnable_tasks_and_cpus() -> None:
    runnable = runnable_tasks()
    assert runnable is not None and runnable >= 1  # the test itself is running
    assert usable_cpus() >= 1


# -- inside a real server ------------------------------------------------------


def _post(url: str, body: dict[str, object], out: list[httpx.Response]) -> threading.Thread:
    def run() -> None:
        out.append(httpx.post(url, json=body, timeout=60))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _wait_for(pred: Callable[[], bool], timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.01)
    return False


def _three_sleepers(backend: LocalCollimateBackend, seconds: float) -> Callable[[], None]:
    """Start three one-shots that sleep, then print ok; returns a function
    that waits for their answers and checks them."""
    url = backend.base_url + "/v1/exec"
    code = f"import time; time.sleep({seconds}); print('ok')"
    out: list[httpx.Response] = []
    threads = [_post(url, {"template_id": "py", "code": code}, out) for _ in range(3)]

    def finish() -> None:
        for thread in threads:
            thread.join(60)
        assert [r.json()["stdout"] for r in out] == ["ok\n"] * 3

    return finish


def test_health_shows_the_slots_and_the_one_shots_waiting() -> None:
    with LocalCollimateBackend(run_slots=1) as backend:
        assert backend.health()["run_slots"] == 1
        service = backend._require().service
        assert service is not None
        service.run_queue._load = BUSY  # as if every CPU were taken
        finish = _three_sleepers(backend, 1)

        def one_runs_two_wait() -> bool:
            health = backend.health()  # (the first takes its clone before it runs)
            return (health["running"], health["queued"]) == (1, 2)

        assert _wait_for(one_runs_two_wait)
        finish()
        # (a one-shot's in-flight slot is held until its clone is wiped, after the answer)
        assert _wait_for(lambda: backend.health()["inflight"] == 0)
        assert (backend.health()["queued"], backend.health()["running"]) == (0, 0)


def test_a_one_shot_is_told_the_cpu_its_turn_owns() -> None:
    """``COLLIMATE_CPU``: one of the server's CPUs, a different one for each
    one-shot running at once (while there are CPUs enough)."""
    code = "import os, time; time.sleep(1); print(os.environ.get('COLLIMATE_CPU'))"
    with LocalCollimateBackend(run_slots=2) as backend:
        url = backend.base_url + "/v1/exec"
        out: list[httpx.Response] = []
        threads = [_post(url, {"template_id": "py", "code": code}, out) for _ in range(2)]
        for thread in threads:
            thread.join(60)
    told = [r.json()["stdout"].strip() for r in out]
    cpus = [int(t) for t in told if t != "None"]
    assert cpus and len(set(cpus)) == len(cpus), told
    assert set(cpus) <= set(usable_cpu_ids())
    assert len(cpus) == min(2, len(usable_cpu_ids())), told


def test_code_that_sleeps_does_not_hold_the_others_back() -> None:
    """Work-conserving: with one slot, three one-shots that only sleep still
    run side by side, since the CPUs idle. (The machine's own reading is
    replaced by an idle one: on a shared machine other work may keep the
    CPUs busy, and then the queue rightly holds the sleepers back.)"""
    with LocalCollimateBackend(run_slots=1) as backend:
        service = backend._require().service
        assert service is not None
        service.run_queue._load = IDLE
        finish = _three_sleepers(backend, 2)
        assert _wait_for(lambda: backend.health()["running"] == 3)
        finish()


def test_a_client_gone_while_waiting_leaves_nothing_behind() -> None:
    with LocalCollimateBackend(run_slots=1) as backend:
        service = backend._require().service
        assert service is not None
        service.run_queue._load = BUSY
        url = backend.base_url + "/v1/exec"
        out: list[httpx.Response] = []
        holder = _post(url, {"template_id": "py", "code": "import time; time.sleep(2)"}, out)
        assert _wait_for(lambda: backend.health()["running"] == 1)
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(
                url,
                json={"template_id": "py", "code": "print('never')"},
                timeout=httpx.Timeout(30, read=0.5),
            )
        holder.join(60)
        assert _wait_for(lambda: backend.health()["inflight"] == 0)
        assert backend.health()["queued"] == 0
        again = httpx.post(url, json={"template_id": "py", "code": "print('again')"}, timeout=60)
        assert again.json()["stdout"] == "again\n"
