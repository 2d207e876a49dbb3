"""The client over many nodes, against real local backends: work spreads
over the nodes, sessions stay on theirs, a draining or dead node is routed
around, and nothing ever runs twice (each backend counts the execs it ran)."""

from __future__ import annotations

import asyncio
import pickle
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from collimate_rl import (
    AsyncMultiNodeClient,
    CollimateClient,
    CollimateDrainingError,
    CollimateError,
    MultiNodeClient,
    Sandbox,
    UnitTestReward,
    connect,
    grade,
    grade_batch,
    grade_batch_async,
)
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.testing import AsyncSessionSurfaceConformance, SessionSurfaceConformance
from collimate_rl.wire import nothing_happened

RIGHT = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a - b\n"
SPEC = UnitTestReward(
    tests=[{"input": [1, 2], "output": 3}, {"input": [2, 2], "output": 4}], entry="add"
)


def execs_run(backend: LocalCollimateBackend) -> int:
    """What the server itself counted (readable after it stopped, too)."""
    service = backend.server.service
    assert service is not None
    return service.execs_run


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[LocalCollimateBackend]]:
    tmp = tmp_path_factory.mktemp("nodes")
    backends = [
        LocalCollimateBackend(run_slots=1, socket_path=tmp / f"node{i}.sock").start()
        for i in range(3)
    ]
    try:
        yield backends
    finally:
        for backend in backends:
            backend.stop()


def dead_url() -> str:
    """A loopback port with nothing listening (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_one_shots_spread_over_every_node(three: list[LocalCollimateBackend]) -> None:
    before = [execs_run(b) for b in three]
    with MultiNodeClient([b.base_url for b in three]) as pool:
        with ThreadPoolExecutor(12) as workers:
            answers = list(
                workers.map(lambda i: pool.exec_once("py", code=f"print({i})"), range(36))
            )
        assert [a["stdout"].strip() for a in answers] == [str(i) for i in range(36)]
        ran = [execs_run(b) - x for b, x in zip(three, before, strict=True)]
        assert sum(ran) == 36
        assert all(n > 0 for n in ran), ran
        assert sum(n["answered"] for n in pool.nodes()) == 36


def test_health_sums_what_the_nodes_run_and_admit(three: list[LocalCollimateBackend]) -> None:
    with MultiNodeClient([b.base_url for b in three]) as pool:
        health = pool.health()
    assert health["status"] == "ok"
    assert health["nodes_ok"] == 3
    assert health["run_slots"] == 3  # one each
    assert health["max_inflight"] == sum(b.health()["max_inflight"] for b in three)
    assert [n["endpoint"] for n in health["nodes"]] == [b.base_url for b in three]


def test_a_session_stays_on_its_node_and_sandbox_files_are_byte_exact(
    three: list[LocalCollimateBackend],
) -> None:
    blob = bytes(range(256)) * 40
    with MultiNodeClient([b.base_url for b in three]) as pool:
        with Sandbox("py", client=pool) as box:
            box.upload_bytes("data.bin", blob)
            assert box.download("data.bin") == blob
            for _ in range(5):  # every exec finds the file: same node each time
                assert box.exec(
                    code="import os; print(os.path.getsize('data.bin'))"
                ).stdout.strip() == str(len(blob))
        assert all(s["session_id"] != box.session_id for s in pool.list_sessions())


def test_grading_runs_unchanged_over_a_pool(three: list[LocalCollimateBackend]) -> None:
    with MultiNodeClient([b.base_url for b in three]) as pool:
        assert grade(pool, "py", RIGHT, SPEC).reward == 1.0
        results = grade_batch(pool, "py", [RIGHT, WRONG] * 12, SPEC)
    assert [r.reward for r in results] == [1.0, 0.0] * 12
    assert not any(r.infra_error for r in results)


def test_connect_with_several_urls_gives_a_pool(
    three: list[LocalCollimateBackend], monkeypatch: pytest.MonkeyPatch
) -> None:
    urls = ",".join(b.base_url for b in three)
    monkeypatch.setenv("COLLIMATE_SERVE_URL", urls)
    for var in ("COLLIMATE_SERVE_SOCKET", "COLLIMATE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    with connect() as pool:
        assert isinstance(pool, MultiNodeClient)
        assert grade(pool, "py", RIGHT, SPEC).reward == 1.0


def test_the_names_before_0_9_still_work_with_a_deprecation_warning(
    three: list[LocalCollimateBackend],
) -> None:
    """``NodePool`` / ``AsyncNodePool`` were this client's names; code that
    imports them from ``collimate_rl.nodes`` still runs, warned of the new
    name. ``collimate_rl.NodePool`` is the fleet view's row (0.8.0's)."""
    import collimate_rl
    import collimate_rl.nodes as nodes
    from collimate_rl.fleetview import NodePool as FleetRow

    with pytest.warns(DeprecationWarning, match=r"collimate_rl\.nodes\.NodePool .*MultiNodeClient"):
        from collimate_rl.nodes import NodePool
    assert NodePool is MultiNodeClient
    with NodePool([b.base_url for b in three[:2]]) as pool:
        assert grade(pool, "py", RIGHT, SPEC).reward == 1.0
    with pytest.warns(DeprecationWarning, match="AsyncMultiNodeClient"):
        old_async = nodes.AsyncNodePool
    assert old_async is AsyncMultiNodeClient

    async def graded() -> list[float]:
        async with old_async([three[0].base_url, three[1].base_url]) as pool:
            return [r.reward for r in await grade_batch_async(pool, "py", [RIGHT, WRONG], SPEC)]

    assert asyncio.run(graded()) == [1.0, 0.0]
    with pytest.warns(DeprecationWarning, match=r"collimate_rl\.AsyncNodePool .*AsyncMultiNode"):
        assert collimate_rl.AsyncNodePool is AsyncMultiNodeClient  # type: ignore[attr-defined]
    assert collimate_rl.NodePool is FleetRow and collimate_rl.NodePool is not MultiNodeClient
    assert "AsyncNodePool" not in collimate_rl.__all__  # no warning on import *
    with pytest.raises(AttributeError):
        nodes.NoSuchPool  # noqa: B018


def test_a_dead_node_is_routed_around(three: list[LocalCollimateBackend]) -> None:
    dead = dead_url()
    with MultiNodeClient([dead, three[0].base_url, three[1].base_url]) as pool:
        answers = [pool.exec_once("py", code="print('x')") for _ in range(9)]
        assert all(a["stdout"].strip() == "x" for a in answers)
        state = pool.nodes()[0]
    assert state["refused"] >= 1
    assert state["answered"] == 0
    assert state["state"] == "unreachable"


def test_every_node_refusing_raises_the_last_refusal() -> None:
    with (
        MultiNodeClient([dead_url(), dead_url()], retries=1, backoff=0.01) as pool,
        pytest.raises(CollimateError) as info,
    ):
        pool.exec_once("py", code="print(1)")
    assert info.value.unsent


def test_an_exec_that_may_have_run_is_never_sent_elsewhere(
    three: list[LocalCollimateBackend],
) -> None:
    """The first node's connection breaks after the request left (injected):
    the exec may have run there, so the pool raises instead of running it on
    the second node too."""

    def broken(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadError("connection reset after the request was sent", request=request)

    flaky = CollimateClient(
        "http://flaky.invalid", retries=0, httpx_transport=httpx.MockTransport(broken)
    )
    live = three[2]
    before = execs_run(live)
    with MultiNodeClient([flaky, live.base_url]) as pool:
        pool._router.nodes[1].in_flight = 5  # (the flaky node is picked first)
        with pytest.raises(CollimateError) as info:
            pool.exec_once("py", code="print(1)")
    assert not info.value.unsent
    assert execs_run(live) == before


def test_a_session_on_a_dead_node_fails_loudly(three: list[LocalCollimateBackend]) -> None:
    """Sessions cannot move: when their node is gone, their requests raise
    (they are never replayed elsewhere)."""
    backend = LocalCollimateBackend(run_slots=1).start()
    try:
        with MultiNodeClient([backend.base_url]) as pool:
            sid = pool.create_session("py")["session_id"]
            backend.stop()
            with pytest.raises(CollimateError):
                pool.session_exec(sid, code="print(1)")
    finally:
        backend.stop()


def test_a_pool_travels_by_pickle_with_its_sessions(three: list[LocalCollimateBackend]) -> None:
    with MultiNodeClient([b.base_url for b in three]) as pool:
        sid = pool.create_session("py")["session_id"]
        pool.session_exec(sid, code="open('mark', 'w').write('here')")
        copy = pickle.loads(pickle.dumps(pool))
        try:
            out = copy.session_exec(sid, code="print(open('mark').read())")
            assert out["stdout"].strip() == "here"
        finally:
            copy.delete_session(sid)
            copy.close()


def test_a_batch_completes_exactly_once_with_a_node_drained_mid_batch() -> None:
    """Three backends; once the batch is under way one of them drains (and
    then stops). All 1,000 candidates get their own right reward, and the
    execs the backends ran add up to the execs the pool got answers for:
    none ran twice, none was lost."""
    backends = [LocalCollimateBackend(run_slots=1).start() for _ in range(3)]
    victim = backends[2]
    try:
        cands = [RIGHT if i % 3 else WRONG for i in range(1000)]
        with MultiNodeClient([b.base_url for b in backends]) as pool:
            drained = threading.Event()

            def drain_once_work_ran() -> None:
                while execs_run(victim) < 1 and not drained.is_set():
                    threading.Event().wait(0.01)
                victim.drain()
                drained.set()

            watcher = threading.Thread(target=drain_once_work_ran)
            watcher.start()
            try:
                results = grade_batch(pool, "py", cands, SPEC, pack=25, concurrency=3)
            finally:
                drained.set()
                watcher.join()
            nodes = pool.nodes()
        assert victim.wait_stopped(60)
        assert [r.reward for r in results] == [1.0 if i % 3 else 0.0 for i in range(1000)]
        assert not any(r.infra_error for r in results)
        ran = [execs_run(b) for b in backends]
        assert sum(ran) == sum(n["answered"] for n in nodes) == 40  # 1000 / 25: nothing twice
        assert ran[2] >= 1 and nodes[2]["refused"] >= 1  # it worked, then turned work away
    finally:
        for backend in backends:
            backend.stop()


def test_the_async_pool_grades_and_routes_around_a_draining_node(
    three: list[LocalCollimateBackend],
) -> None:
    draining = LocalCollimateBackend(run_slots=1).start()
    try:
        draining.drain()

        async def main() -> list[float]:
            async with AsyncMultiNodeClient([draining.base_url, three[0].base_url]) as pool:
                results = await grade_batch_async(pool, "py", [RIGHT, WRONG] * 8, SPEC, pack=4)
                # the draining node ran nothing (its state may be back to "in"
                # by now: it is left alone for DRAINING_OUT_S, then asked again)
                assert pool.nodes()[0]["answered"] == 0
                assert pool.nodes()[1]["answered"] >= 4
                return [r.reward for r in results]

        assert asyncio.run(main()) == [1.0, 0.0] * 8
    finally:
        draining.stop()


def test_bad_nodes_are_refused_with_a_clear_error() -> None:
    with pytest.raises(ValueError, match="at least one node"):
        MultiNodeClient([])
    with pytest.raises(ValueError, match="expected http"):
        MultiNodeClient(["ftp://x"])
    with pytest.raises(ValueError, match="socket path"):
        MultiNodeClient(["unix:"])


def test_a_lone_draining_node_raises_the_typed_draining_error() -> None:
    """While a drain waits for a running exec, new work is refused with
    ``draining`` (nothing ran: the caller may send it elsewhere)."""
    backend = LocalCollimateBackend(run_slots=1).start()
    try:
        with MultiNodeClient([backend.base_url], retries=0) as pool:
            sid = pool.create_session("py")["session_id"]
            running = threading.Thread(
                target=pool.session_exec, args=(sid,), kwargs={"code": "import time; time.sleep(2)"}
            )
            running.start()
            while backend.health()["running"] < 1:
                threading.Event().wait(0.01)
            backend.drain()
            while backend.health()["status"] != "draining":
                threading.Event().wait(0.01)
            with pytest.raises(CollimateDrainingError) as info:
                pool.exec_once("py", code="print(1)")
            running.join()
        assert nothing_happened(info.value)
    finally:
        backend.stop()


# -- the session-surface conformance suite, through a pool over the backends


class _Py:
    @pytest.fixture
    def template_id(self) -> str:
        return "py"


class TestNodePoolConformance(_Py, SessionSurfaceConformance):
    @pytest.fixture
    def client(self, three: list[LocalCollimateBackend]) -> Iterator[Any]:
        with MultiNodeClient([b.base_url for b in three]) as pool:
            yield pool


class TestAsyncNodePoolConformance(_Py, AsyncSessionSurfaceConformance):
    @pytest.fixture
    def client(self, three: list[LocalCollimateBackend]) -> Any:
        return AsyncMultiNodeClient([three[0].base_url, f"unix:{three[1].socket_path}"])
