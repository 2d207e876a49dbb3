"""Single grades that arrive together (many tasks of one event loop, many
threads) are sent as packs, against the REAL local backend: every caller
gets exactly its own result, the one a lone grade gives, or its own error."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import httpx
import pytest

from collimate_rl import (
    AsyncCollimateClient,
    CollimateClient,
    CollimateError,
    GradeResult,
    PropertyReward,
    RewardSpec,
    StdioReward,
    UnitTestReward,
    fresh_seed,
    grade,
    grade_async,
)
from collimate_rl.grading import GraderInfraError
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.pipeline import coalesce

TEMPLATE = "py"
SEEDED = UnitTestReward([{"input": [i], "output": i % 3} for i in range(8)])
DRAWS = "import random\ndef solve(i):\n    return random.randint(0, 2)\n"
RIGHT = "def solve(i):\n    return i % 3\n"
VOWELS = PropertyReward(
    reference="    return sum(c in 'aeiouAEIOU' for c in x)",
    generator="''.join(random.choice('abcdEIOUxyz') for _ in range(8))",
    k=8,
)
HALF_VOWELS = "def solve(x):\n    return sum(c in 'aeiou' for c in x)\n"
ECHO = StdioReward([{"input": "3 4\n", "output": "7"}])
ADDS = "a, b = map(int, input().split())\nprint(a + b)\n"
INFRA_MARK = "#INJECT-INFRA-FAILURE"


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with LocalCollimateBackend() as b:
        yield b


def packed(result: GradeResult) -> bool:
    return "pack" in result.raw


Case = tuple[str, RewardSpec, str]


def cases(n: int) -> list[Case]:
    """``n`` grades of three prompts (three specs), each with its own seed."""
    rows: list[tuple[str, RewardSpec]] = [(DRAWS, SEEDED), (HALF_VOWELS, VOWELS), (ADDS, ECHO)]
    return [(*rows[i % 3], fresh_seed()) for i in range(n)]


async def together(url: str, batch: Sequence[Case], **kw: Any) -> list[Any]:
    async with AsyncCollimateClient(url, retries=0, **kw) as c:
        return await asyncio.gather(
            *(grade_async(c, TEMPLATE, cand, spec, seed=seed) for cand, spec, seed in batch),
            return_exceptions=True,
        )


def test_tasks_of_one_loop_grading_together_are_sent_as_packs(
    backend: LocalCollimateBackend,
    same_as_alone: Callable[..., None],
) -> None:
    """Started in one turn of the loop, they leave together, in packs that
    mix prompts; each result is its lone grade's."""
    batch = cases(30)
    results = asyncio.run(together(backend.base_url, batch))
    assert all(isinstance(r, GradeResult) and packed(r) for r in results), results
    for result, (cand, spec, seed) in zip(results, batch, strict=True):
        same_as_alone(result, cand, spec, seed)
    mixed = {}
    for result, (_, spec, _) in zip(results, batch, strict=True):
        mixed.setdefault(result.raw["pack"]["nonce"], set()).add(id(spec))
    assert any(len(specs) > 1 for specs in mixed.values())  # a pack across prompts


def test_threads_grading_together_are_sent_as_packs(
    backend: LocalCollimateBackend,
    monkeypatch: pytest.MonkeyPatch,
    same_as_alone: Callable[..., None],
) -> None:
    """(A wide window, so that however the threads are scheduled, they meet.)"""
    monkeypatch.setattr(coalesce, "WINDOW_S", 1.0)
    monkeypatch.setattr(coalesce, "HOLD_S", 5.0)
    batch = cases(24)
    results: list[Any] = [None] * len(batch)
    go = threading.Barrier(len(batch), timeout=60)

    with CollimateClient(backend.base_url, retries=0) as c:

        def work(i: int) -> None:
            cand, spec, seed = batch[i]
            go.wait()
            results[i] = grade(c, TEMPLATE, cand, spec, seed=seed)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(batch))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    # the first leaves at once (nothing else was in flight); the others meet
    assert sum(packed(r) for r in results) >= len(batch) - 1
    for result, (cand, spec, seed) in zip(results, batch, strict=True):
        same_as_alone(result, cand, spec, seed)


def test_a_grade_that_arrives_alone_leaves_at_once(
    backend: LocalCollimateBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a window of an hour, a lone grade (and one after another) still
    returns: it never waits for company that is not coming."""
    monkeypatch.setattr(coalesce, "WINDOW_S", 3600.0)
    monkeypatch.setattr(coalesce, "HOLD_S", 3600.0)
    with CollimateClient(backend.base_url, retries=0) as c:
        results = [grade(c, TEMPLATE, RIGHT, SEEDED) for _ in range(3)]

    async def run() -> list[GradeResult]:
        async with AsyncCollimateClient(backend.base_url, retries=0) as ac:
            return [await grade_async(ac, TEMPLATE, RIGHT, SEEDED) for _ in range(3)]

    results += asyncio.run(run())
    assert [r.reward for r in results] == [1.0] * 6 and not any(packed(r) for r in results)


def _faulty(base_url: str) -> httpx.MockTransport:
    """Forwards to the real server, except an exec carrying INFRA_MARK: 500."""

    async def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content or b"{}")
        if any(INFRA_MARK in f.get("content", "") for f in body.get("files") or []):
            return httpx.Response(500, json={"error": "injected", "error_code": "internal"})
        async with httpx.AsyncClient(base_url=base_url, timeout=60) as upstream:
            r = await upstream.request(
                request.method, request.url.path, content=request.content,
                headers={"content-type": "application/json"},
            )  # fmt: skip
        return httpx.Response(r.status_code, content=r.content, headers=r.headers)

    return httpx.MockTransport(handle)


def test_each_caller_gets_its_own_error(backend: LocalCollimateBackend) -> None:
    """The pack carrying a candidate the backend fails on is graded again
    alone: that caller gets the backend's error, the others their rewards."""
    batch = [(RIGHT + (INFRA_MARK if i == 3 else ""), SEEDED, fresh_seed()) for i in range(8)]
    results = asyncio.run(
        together(backend.base_url, batch, httpx_transport=_faulty(backend.base_url))
    )
    assert isinstance(results[3], CollimateError) and "injected" in str(results[3])
    rest = results[:3] + results[4:]
    assert all(isinstance(r, GradeResult) and r.reward == 1.0 for r in rest), rest


def test_a_verdict_that_blames_the_infrastructure_fails_its_own_caller_only(
    backend: LocalCollimateBackend,
) -> None:
    broken = PropertyReward(reference="    return x.nope()", generator="7", k=2)
    batch: list[Case] = [(RIGHT, SEEDED, fresh_seed()) for _ in range(6)]
    batch[2] = (HALF_VOWELS, broken, fresh_seed())
    results = asyncio.run(together(backend.base_url, batch))
    assert isinstance(results[2], GraderInfraError) and "AttributeError" in str(results[2])
    rest = results[:2] + results[3:]
    assert all(isinstance(r, GradeResult) and r.reward == 1.0 and packed(r) for r in rest)


class _Held:
    """A real async client whose pack execs wait for ``proceed``."""

    def __init__(self, inner: AsyncCollimateClient) -> None:
        self.inner = inner
        self.started = asyncio.Event()
        self.proceed = asyncio.Event()
        self.endpoint = inner.endpoint

    async def health(self) -> dict[str, Any]:
        return await self.inner.health()

    async def exec_once(self, *a: Any, **kw: Any) -> dict[str, Any]:
        if len(kw.get("files") or []) > 2:  # (a pack: candidates and sealed data)
            self.started.set()
            await self.proceed.wait()
        return await self.inner.exec_once(*a, **kw)


def test_cancelled_callers_never_strand_the_others(backend: LocalCollimateBackend) -> None:
    """A caller cancelled while it waits leaves the queue; the one sending
    its pack, cancelled mid-exec, hands the others back to be sent again."""

    async def run() -> list[Any]:
        async with AsyncCollimateClient(backend.base_url, retries=0) as ac:
            held = _Held(ac)
            tasks = [
                asyncio.create_task(grade_async(held, TEMPLATE, RIGHT, SEEDED))  # type: ignore[arg-type]
                for _ in range(10)
            ]
            await held.started.wait()  # the first pack is in flight, sent by a caller
            for task in tasks[:2]:  # the sender (the first to arrive) and one more
                task.cancel()
            held.proceed.set()
            return await asyncio.gather(*tasks, return_exceptions=True)

    results = asyncio.run(run())
    assert all(isinstance(r, asyncio.CancelledError) for r in results[:2])
    assert all(isinstance(r, GradeResult) and r.reward == 1.0 for r in results[2:]), results


def test_grades_in_a_warm_session_and_without_coalescing_go_alone(
    backend: LocalCollimateBackend,
) -> None:
    async def run(session: str) -> list[GradeResult]:
        async with AsyncCollimateClient(backend.base_url, retries=0) as ac:
            in_session = [
                grade_async(ac, TEMPLATE, RIGHT, SEEDED, session_id=session) for _ in range(4)
            ]
            off = [grade_async(ac, TEMPLATE, RIGHT, SEEDED, coalesce=False) for _ in range(4)]
            return list(await asyncio.gather(*in_session, *off))

    with CollimateClient(backend.base_url) as c:
        session = c.create_session(TEMPLATE)["session_id"]
        try:
            results = asyncio.run(run(session))
        finally:
            c.delete_session(session)
    assert [r.reward for r in results] == [1.0] * 8 and not any(packed(r) for r in results)


def test_several_loops_in_several_threads_each_coalesce_their_own(
    backend: LocalCollimateBackend,
    same_as_alone: Callable[..., None],
) -> None:
    """Each loop packs its own tasks' grades (its clients belong to it),
    all within the one server's admission; every result its lone grade's."""
    batches = [cases(9) for _ in range(4)]
    out: list[list[Any]] = [[] for _ in batches]

    def loop(i: int) -> None:
        out[i] = asyncio.run(together(backend.base_url, batches[i]))

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(len(batches))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for results, batch in zip(out, batches, strict=True):
        assert all(isinstance(r, GradeResult) and packed(r) for r in results), results
        for result, (cand, spec, seed) in zip(results, batch, strict=True):
            same_as_alone(result, cand, spec, seed)


def test_a_pack_whose_sender_left_passes_to_a_caller_still_there() -> None:
    """A thread interrupted (KeyboardInterrupt) after it was told to send
    its pack leaves; the pack goes to the next of its callers, and one with
    nobody left is dropped from the count of execs in flight."""
    pool = coalesce._Pool()
    jobs = [coalesce.Job(i, RIGHT, SEEDED, None) for i in range(3)]
    entries = [coalesce._Entry(job, None, coalesce._Box()) for job in jobs]
    for entry in entries:
        pool.join(entry)
    (pack,) = pool.seal()
    assert pool.busy == 1 and pool.flying == 3
    coalesce._hand_out(pool, [pack])
    coalesce._leave(pool, entries[0])  # told to send, interrupted before it did
    assert entries[1].box.take() == (coalesce._SEND, pack)
    coalesce._leave(pool, entries[1])
    coalesce._leave(pool, entries[2])
    assert entries[2].box.leave() is None  # (nothing was handed to the last)
    lone = coalesce._Entry(jobs[0], None, coalesce._Box())
    pool.join(lone)
    (single,) = pool.seal()
    lone.box.leave()
    coalesce._hand_out(pool, [single])  # its only caller is gone: nobody sends it
    # the first pack is still counted (its sender took it), the unsent one not
    assert pool.busy == 1 and pool.flying == 3
