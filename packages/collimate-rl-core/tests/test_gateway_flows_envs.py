"""Environments on the gateway wire of a real local backend: a catalog ref
baked at the declared width, an own template declared with expect, release
on exit (exceptions included), plain handles; sync and async."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from collimate_rl import (
    AsyncEnv,
    AsyncGatewayClient,
    Env,
    GatewayClient,
    GatewayError,
    Template,
)
from collimate_rl.local_backend import LocalCollimateBackend

PRO = "col_pro_flows-envs"
DEMO = "col_demo_flows-envs"


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with LocalCollimateBackend(api_keys=[PRO, DEMO]) as be:
        yield be


class Releases:
    """Records each release a client sends (the real call still runs)."""

    def __init__(self, client: Any) -> None:
        self.ids: list[str] = []
        real = client.release_template

        def release(template_id: str) -> Any:
            self.ids.append(template_id)
            return real(template_id)

        client.release_template = release


@pytest.fixture
def pro(backend: LocalCollimateBackend) -> Iterator[GatewayClient]:
    with GatewayClient(api_key=PRO, base_url=backend.base_url) as client:
        yield client
        assert client.list_sandboxes() == []


def test_a_catalog_ref_is_baked_at_the_width_and_released(pro: GatewayClient) -> None:
    releases = Releases(pro)
    with pro.env("py", width=3) as env:
        assert isinstance(env, Env) and env.baked and env.id != "py"
        st = env.status()
        assert st.live and st.declared == 3 and st.image == "local/py"
        with env.sandbox() as sess:
            assert sess.exec("print('in env')").stdout == "in env\n"
            with sess.fork_group(3) as group:
                assert len(group) == 3
        assert releases.ids == []
    assert releases.ids == [env.id]
    env.release()  # once only
    assert releases.ids == [env.id]
    pro.delete_template(env.id)


def test_an_own_template_gets_expect_and_release_even_on_error(pro: GatewayClient) -> None:
    handle = Template.bake(pro, name="own-env", image="python:3.11", width=1)
    handle.wait(120, poll_interval=0.05)
    releases = Releases(pro)
    with pytest.raises(LookupError), pro.env(handle.id, width=3) as env:
        assert not env.baked and env.id == handle.id
        assert pro.get_template(handle.id)["expected_width"] == 3
        raise LookupError("trainer failed mid-session")
    assert releases.ids == [handle.id]
    assert not pro.get_template(handle.id).get("expected_width")
    pro.delete_template(handle.id)


def test_no_width_is_a_plain_handle_with_nothing_to_release(backend: LocalCollimateBackend) -> None:
    with GatewayClient(api_key=DEMO, base_url=backend.base_url) as demo:
        releases = Releases(demo)
        with demo.env("py") as env, env.sandbox() as sess:
            assert env.id == "py"
            assert sess.exec("print(1)").ok
        assert releases.ids == []
        with pytest.raises(GatewayError) as info:
            demo.env("py", width=4)  # declaring a width means baking: pro/ent
        assert info.value.code == "forbidden"
        with pytest.raises(ValueError, match="width"):
            demo.env("py", width=0)
        assert demo.list_sandboxes() == []


def test_an_unknown_ref_is_not_found(pro: GatewayClient) -> None:
    with pytest.raises(GatewayError) as info:
        pro.env("no-such-env", width=2)
    assert info.value.code == "not_found"


def test_async_env(backend: LocalCollimateBackend) -> None:
    async def main() -> None:
        async with AsyncGatewayClient(api_key=PRO, base_url=backend.base_url) as client:
            releases = Releases(client)
            env = client.env("sh", width=2)
            assert isinstance(env, AsyncEnv)
            with pytest.raises(RuntimeError, match="await"):
                env.sandbox()
            async with env:
                assert env.baked and (await env.status()).live
                async with env.sandbox() as sess:
                    assert (await sess.exec(command="echo hi")).stdout == "hi\n"
                    async with sess.fork_group(2) as group:
                        assert len(group) == 2
            assert releases.ids == [env.id]
            with pytest.raises(ZeroDivisionError):
                async with client.env(env.id, width=2):
                    1 / 0  # noqa: B018
            assert releases.ids == [env.id, env.id]
            assert await client.list_sandboxes() == []
            await client.delete_template(env.id)

    asyncio.run(main())
