"""Fork groups on the gateway wire of a real local backend: chunking by the
tier's cap, strict width (a short or failed chunk tears the group down),
positional exec_each/map with each child's CRN seed, teardown; sync and async.

The one fault a real server will not produce on demand, a fork answering
fewer children than asked, is injected by an httpx transport that forwards
every request to the real server and drops one child from one answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import httpx
import pytest

from collimate_rl import (
    AsyncForkGroup,
    AsyncGatewayClient,
    CollimateError,
    DemoTierLimit,
    ForkGroup,
    GatewayClient,
    GatewayError,
    seed_from_key,
)
from collimate_rl.gateway_flows import fork_cap
from collimate_rl.gateway_flows.fork_group import plan_group
from collimate_rl.local_backend import LocalCollimateBackend

PRO = "col_pro_flows-forks"
DEMO = "col_demo_flows-forks"
ENT = "col_ent_flows-forks"
DRAW = "import random; print(random.randrange(10**12))"


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with LocalCollimateBackend(api_keys=[PRO, DEMO, ENT]) as be:
        yield be


def _client(backend: LocalCollimateBackend, key: str, **kw: Any) -> GatewayClient:
    return GatewayClient(api_key=key, base_url=backend.base_url, **kw)


@pytest.fixture
def pro(backend: LocalCollimateBackend) -> Iterator[GatewayClient]:
    with _client(backend, PRO) as client:
        yield client
        assert client.list_sandboxes() == []


@pytest.fixture
def demo(backend: LocalCollimateBackend) -> Iterator[GatewayClient]:
    with _client(backend, DEMO) as client:
        yield client
        assert client.list_sandboxes() == []


class ForkSpy:
    """Records the count of every fork call a session makes (the real call still runs)."""

    def __init__(self, session: Any) -> None:
        self.counts: list[int] = []
        real = session.fork

        def fork(n: int = 1, labels: Any = None) -> Any:
            self.counts.append(n)
            return real(n, labels=labels)

        session.fork = fork


def test_plan_group_chunks_and_checks_its_input() -> None:
    assert [k for k, _ in plan_group(64, 32, None)] == [32, 32]
    assert [k for k, _ in plan_group(9, 4, None)] == [4, 4, 1]
    assert plan_group(3, 2, ["a", "b", "c"]) == [(2, ["a", "b"]), (1, ["c"])]
    assert plan_group(2, 4, {"run": "x"}) == [(2, {"run": "x"})]
    with pytest.raises(ValueError, match="n >= 1"):
        plan_group(0, 4, None)
    with pytest.raises(ValueError, match="labels has 1 entries"):
        plan_group(2, 4, ["a"])


def test_pro_group_chunks_at_32_and_children_inherit_then_diverge(pro: GatewayClient) -> None:
    with pro.session("py") as sess:
        sess.exec("open('/tmp/prefix', 'w').write('shared prefix')")
        spy = ForkSpy(sess)
        with sess.fork_group(40) as group:
            assert isinstance(group, ForkGroup) and len(group) == 40
            assert spy.counts == [32, 8]
            assert len(set(group.ids)) == 40 and sess.id not in group.ids
            got = group.map(lambda i, c: c.exec(f"print(open('/tmp/prefix').read(), {i})").stdout)
            assert got == [f"shared prefix {i}\n" for i in range(40)]  # positional
            group.map(lambda i, c: c.exec(f"open('/tmp/prefix', 'w').write('child {i}')"))
            assert group[7].exec("print(open('/tmp/prefix').read())").stdout == "child 7\n"
            assert sess.exec("print(open('/tmp/prefix').read())").stdout == "shared prefix\n"
        assert len(pro.list_sandboxes()) == 1  # only the parent is left


def test_ent_cap_is_64_and_demo_cap_is_4(backend: LocalCollimateBackend) -> None:
    for key, n, want in ((ENT, 70, [64, 6]), (DEMO, 6, [4, 2])):
        with _client(backend, key) as client, client.session("py") as sess:
            spy = ForkSpy(sess)
            with sess.fork_group(n) as group:
                assert len(group) == n
            assert spy.counts == want
            assert len(client.list_sandboxes()) == 1


def test_crn_children_share_a_seed_and_draw_the_same(pro: GatewayClient) -> None:
    base = seed_from_key("prompt-17")
    with pro.session("py") as sess, sess.fork_group(5, seed_mode="crn", base_seed=base) as grp:
        assert grp.seeds == [base] * 5
        results = grp.exec_each(DRAW)
        assert all(r is not None and r.seed == base for r in results)
        assert len({r.stdout for r in results if r is not None}) == 1
    with pro.session("py") as sess, sess.fork_group(5, seed_mode="vanilla") as grp:
        results = grp.exec_each(DRAW)
        assert len({r.seed for r in results if r is not None}) == 5  # fresh per child


def test_exec_each_infra_errors_raise_or_leave_none(pro: GatewayClient) -> None:
    with pro.session("py") as sess, sess.fork_group(3) as group:
        pro.delete_sandbox(group.ids[1])  # a child vanishes server-side
        kept = group.exec_each("print('ok')", on_infra_error="none")
        assert kept[0] is not None and kept[2] is not None and kept[1] is None
        with pytest.raises(GatewayError) as info:
            group.exec_each("print('ok')")
        assert info.value.code == "not_found"
        with pytest.raises(ValueError, match="on_infra_error"):
            group.exec_each("print(1)", on_infra_error="zero")  # type: ignore[arg-type]

        def buggy(i: int, child: Any) -> Any:
            raise TypeError("a bug in the caller's function is never swallowed")

        with pytest.raises(TypeError):
            group.map(buggy, on_infra_error="none")


def test_children_are_deleted_when_the_block_raises(pro: GatewayClient) -> None:
    with pro.session("py") as sess:
        with pytest.raises(KeyError), sess.fork_group(6):
            assert len(pro.list_sandboxes()) == 7
            raise KeyError("trainer crashed")
        assert len(pro.list_sandboxes()) == 1


def test_closing_the_session_closes_its_groups(pro: GatewayClient) -> None:
    with pro.session("py") as sess:
        group = sess.fork_group(3)  # never closed by the caller
        assert len(pro.list_sandboxes()) == 4
    assert len(group) == 0  # the pro fixture checks the server holds nothing


def test_a_refused_chunk_tears_the_whole_group_down(demo: GatewayClient) -> None:
    # demo: 8 sandboxes at once; the parent + 4 fit, the second chunk does not
    with demo.session("py") as sess:
        with pytest.raises(DemoTierLimit):
            sess.fork_group(8)
        assert [sb["id"] for sb in demo.list_sandboxes()] == [sess.id]


@contextlib.contextmanager
def _reaping(client: GatewayClient, ids: list[str]) -> Iterator[None]:
    """Deletes the ids the fault dropped, whatever the test's outcome."""
    try:
        yield
    finally:
        for sandbox_id in ids:
            client.delete_sandbox(sandbox_id)


class DropOneChild(httpx.BaseTransport):
    """Forwards to the real server; the ``nth`` fork answer loses its last child."""

    def __init__(self, nth: int) -> None:
        self.real = httpx.HTTPTransport()
        self.forks = 0
        self.nth = nth
        self.dropped: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.real.handle_request(request)
        if not request.url.path.endswith("/fork"):
            return response
        self.forks += 1
        body = json.loads(response.read())
        if self.forks == self.nth:
            self.dropped.append(body["children"].pop()["id"])
        return httpx.Response(response.status_code, json=body)

    def close(self) -> None:
        self.real.close()


def test_a_short_fork_tears_the_group_down_and_raises(
    backend: LocalCollimateBackend, pro: GatewayClient
) -> None:
    transport = DropOneChild(nth=2)
    with (
        _client(backend, PRO, httpx_transport=transport) as client,
        client.session("py") as sess,
        _reaping(pro, transport.dropped),
    ):
        with pytest.raises(GatewayError) as info:
            sess.fork_group(10, max_per_call=4)  # 4 + 4 (one dropped) + 2
        assert info.value.code == "fork_short"
        assert "got 3 (7/10 of the group)" in str(info.value)
        # the 7 children the client knew of are gone; the one it never saw is
        # the server's to reap (here: deleted by hand to prove it existed)
        left = {sb["id"] for sb in pro.list_sandboxes()}
        assert left == {sess.id, *transport.dropped}


def test_async_fork_group(backend: LocalCollimateBackend) -> None:
    async def main() -> None:
        async with AsyncGatewayClient(api_key=PRO, base_url=backend.base_url) as client:
            async with client.session("py") as sess:
                await sess.exec("open('/tmp/p', 'w').write('p')")
                group = sess.fork_group(12, base_seed="cd" * 32, max_per_call=8)
                assert isinstance(group, AsyncForkGroup) and len(group) == 0  # not forked yet
                spy = ForkSpy(sess)
                async with group:
                    assert len(group) == 12
                    results = await group.exec_each("print(open('/tmp/p').read())")
                    assert [r.stdout if r else None for r in results] == ["p\n"] * 12
                    assert {r.seed for r in results if r} == {"cd" * 32}

                    async def index(i: int, child: Any) -> str:
                        return (await child.exec(f"print({i})")).stdout

                    assert await group.map(index) == [f"{i}\n" for i in range(12)]
                assert spy.counts == [8, 4]
                assert fork_cap(client) == 32  # the default for this pro key
                assert len(await client.list_sandboxes()) == 1
                with pytest.raises(RuntimeError):
                    async with sess.fork_group(3):
                        raise RuntimeError("boom")
                awaited = await sess.fork_group(2)
                await client.delete_sandbox(awaited.ids[0])
                with pytest.raises(CollimateError):
                    await awaited.exec_each("print(1)")
                await awaited.close()
                assert len(await client.list_sandboxes()) == 1
                await sess.fork_group(2)  # left open: the session's exit closes it
                assert len(await client.list_sandboxes()) == 3
            assert await client.list_sandboxes() == []

    asyncio.run(main())


def test_async_refused_chunk_tears_down(backend: LocalCollimateBackend) -> None:
    async def main() -> None:
        async with (
            AsyncGatewayClient(api_key=DEMO, base_url=backend.base_url) as client,
            client.session("py") as sess,
        ):
            with pytest.raises(DemoTierLimit):
                await sess.fork_group(8)
            assert [sb["id"] for sb in await client.list_sandboxes()] == [sess.id]

    asyncio.run(main())


class AsyncDropOneChild(httpx.AsyncBaseTransport):
    """:class:`DropOneChild` for the async client."""

    def __init__(self, nth: int) -> None:
        self.real = httpx.AsyncHTTPTransport()
        self.forks = 0
        self.nth = nth
        self.dropped: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.real.handle_async_request(request)
        if not request.url.path.endswith("/fork"):
            return response
        self.forks += 1
        body = json.loads(await response.aread())
        if self.forks == self.nth:
            self.dropped.append(body["children"].pop()["id"])
        return httpx.Response(response.status_code, json=body)

    async def aclose(self) -> None:
        await self.real.aclose()


def test_async_short_fork_tears_down(backend: LocalCollimateBackend, pro: GatewayClient) -> None:
    transport = AsyncDropOneChild(nth=1)

    async def main() -> None:
        async with (
            AsyncGatewayClient(
                api_key=PRO, base_url=backend.base_url, httpx_transport=transport
            ) as client,
            client.session("py") as sess,
        ):
            with pytest.raises(GatewayError) as info:
                await sess.fork_group(10)
            assert info.value.code == "fork_short"
            left = {sb["id"] for sb in await client.list_sandboxes()}
            assert left == {sess.id, *transport.dropped}

    with _reaping(pro, transport.dropped):
        asyncio.run(main())


def test_an_interrupt_between_chunks_tears_down(pro: GatewayClient) -> None:
    with pro.session("py") as sess:
        real = sess.fork
        calls: list[int] = []

        def fork(n: int = 1, labels: Any = None) -> Any:
            calls.append(n)
            if len(calls) == 2:
                raise KeyboardInterrupt  # Ctrl-C while the group is half forked
            return real(n, labels=labels)

        sess.fork = fork  # type: ignore[method-assign]
        with pytest.raises(KeyboardInterrupt):
            sess.fork_group(40)
        assert calls == [32, 8]
        assert [sb["id"] for sb in pro.list_sandboxes()] == [sess.id]


def test_async_group_is_deleted_when_its_task_is_cancelled(
    backend: LocalCollimateBackend, cancel_mid_exec: Callable[..., Awaitable[None]]
) -> None:
    async def main() -> None:
        async with AsyncGatewayClient(api_key=PRO, base_url=backend.base_url) as client:
            forked = asyncio.Event()

            async def rollout() -> None:
                async with client.session("sh") as sess, sess.fork_group(4) as group:
                    forked.set()
                    await group.exec_each(command="sleep 10", timeout_seconds=60)

            await cancel_mid_exec(rollout(), forked)
            assert await client.list_sandboxes() == []

    asyncio.run(main())


def test_bad_group_arguments_fail_before_anything_is_created(pro: GatewayClient) -> None:
    sess = pro.session("py")
    with pytest.raises(ValueError, match="n >= 1"):
        sess.fork_group(0)
    with pytest.raises(ValueError, match="mode"):
        sess.fork_group(2, seed_mode="bogus")
    with pytest.raises(ValueError, match="labels"):
        sess.fork_group(2, labels=["only-one"])
    assert sess.id is None  # the fixture checks the server holds nothing
