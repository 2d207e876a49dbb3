"""Sessions on the gateway wire of a real local backend (pro and demo keys):
open/exec/close, raw fork, suspend/resume, teardown on every path; sync and
async."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator

import pytest

from collimate_rl import (
    AsyncGatewayClient,
    AsyncSession,
    DemoTierLimit,
    GatewayClient,
    GatewayError,
    Session,
)
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.template import open_session

PRO = "col_pro_flows-sessions"
DEMO = "col_demo_flows-sessions"


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with LocalCollimateBackend(api_keys=[PRO, DEMO]) as be:
        yield be


@pytest.fixture
def pro(backend: LocalCollimateBackend) -> Iterator[GatewayClient]:
    with GatewayClient(api_key=PRO, base_url=backend.base_url) as client:
        yield client
        assert client.list_sandboxes() == []  # every test leaves nothing behind


@pytest.fixture
def demo(backend: LocalCollimateBackend) -> Iterator[GatewayClient]:
    with GatewayClient(api_key=DEMO, base_url=backend.base_url) as client:
        yield client
        assert client.list_sandboxes() == []


def test_session_opens_execs_and_deletes(pro: GatewayClient) -> None:
    sess = pro.session("py")
    assert isinstance(sess, Session) and sess.id is None
    with sess as s:
        assert s.id is not None
        assert [sb["id"] for sb in pro.list_sandboxes()] == [s.id]
        r = s.exec("import random; print(random.randrange(10**9))", seed="ab" * 32)
        again = s.exec("import random; print(random.randrange(10**9))", seed="ab" * 32)
        assert r.ok and r.stdout == again.stdout and r.seed == "ab" * 32
        assert s.exec(command="echo hi; exit 3").exit_code == 3
    assert sess.id is None


def test_session_is_deleted_when_the_block_raises(pro: GatewayClient) -> None:
    with pytest.raises(ZeroDivisionError), pro.session("py") as s:
        s.exec(command="true")
        1 / 0  # noqa: B018
    # the pro fixture asserts no sandbox is left


def test_session_accepts_a_handle_and_the_seed_function(pro: GatewayClient) -> None:
    class Handle:
        id = "py"

    with open_session(pro, Handle()) as s:
        assert s.template == "py"
        assert s.exec("print(6*7)").stdout.strip() == "42"
    with pytest.raises(ValueError, match="template"):
        pro.session("")


def test_raw_fork_children_see_the_parent_files_then_diverge(pro: GatewayClient) -> None:
    with pro.session("sh") as s:
        s.exec(command="echo parent > /tmp/state")
        children = s.fork(2)
        try:
            assert len(children) == 2
            a, b = (c["id"] for c in children)
            assert pro.exec(a, command="cat /tmp/state")["stdout"].strip() == "parent"
            pro.exec(a, command="echo child > /tmp/state")
            assert pro.exec(b, command="cat /tmp/state")["stdout"].strip() == "parent"
            assert s.exec(command="cat /tmp/state").stdout.strip() == "parent"
        finally:
            for c in children:
                pro.delete_sandbox(c["id"])


def test_suspend_and_resume(pro: GatewayClient) -> None:
    with pro.session("sh") as s:
        assert s.suspend()["state"] != "running"
        assert s.resume()["state"] == "running"
        assert s.exec(command="echo back").stdout.strip() == "back"
    with pytest.raises(RuntimeError, match="not open"):
        s.suspend()


def test_demo_limit_is_typed_with_the_servers_message(demo: GatewayClient) -> None:
    sessions = [demo.session("py").open() for _ in range(8)]
    try:
        with pytest.raises(DemoTierLimit) as info:
            demo.session("py").open()
        assert info.value.message == info.value.body["message"]  # verbatim
        assert "demo" in info.value.message
    finally:
        for s in sessions:
            s.close()


def test_unknown_template_is_a_gateway_error(pro: GatewayClient) -> None:
    with pytest.raises(GatewayError) as info, pro.session("no-such-template"):
        pass
    assert info.value.code == "not_found"


def test_async_session(backend: LocalCollimateBackend) -> None:
    async def main() -> None:
        async with AsyncGatewayClient(api_key=PRO, base_url=backend.base_url) as client:
            sess = client.session("sh")
            assert isinstance(sess, AsyncSession)
            async with sess as s:
                assert (await s.exec(command="echo hi")).stdout.strip() == "hi"
                children = await s.fork(1)
                await client.delete_sandbox(children[0]["id"])
                assert (await s.suspend())["state"] != "running"
                assert (await s.resume())["state"] == "running"
            opened = await client.session("py")  # awaiting opens it
            assert opened.id is not None
            await opened.close()
            with pytest.raises(KeyError):
                async with client.session("py"):
                    raise KeyError("boom")
            assert await client.list_sandboxes() == []

    asyncio.run(main())


def test_async_session_is_deleted_when_cancelled(
    backend: LocalCollimateBackend, cancel_mid_exec: Callable[..., Awaitable[None]]
) -> None:
    async def main() -> None:
        async with AsyncGatewayClient(api_key=PRO, base_url=backend.base_url) as client:
            opened = asyncio.Event()

            async def hold() -> None:
                async with client.session("sh") as s:
                    opened.set()
                    await s.exec(command="sleep 10", timeout_seconds=60)

            await cancel_mid_exec(hold(), opened)
            assert await client.list_sandboxes() == []

    asyncio.run(main())


def test_the_earlier_import_paths_name_the_same_objects() -> None:
    import collimate_rl
    from collimate_rl import template

    for name in ("Ready", "Template", "TemplateHandle", "TemplateStatus", "Session", "Env",
                 "ForkGroup", "TemplateBakeFailed", "DemoTierLimit"):  # fmt: skip
        assert getattr(template, name) is getattr(collimate_rl, name), name
    assert callable(GatewayClient.env) and callable(GatewayClient.session)
