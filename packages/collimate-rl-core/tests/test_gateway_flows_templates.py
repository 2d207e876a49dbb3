"""Baking on the gateway wire of a real local backend: Template.bake ->
TemplateHandle.wait through the phases to a full pool, a Failed bake as a
typed error, a template deleted mid-wait, status/attach from a fresh client,
tier refusals; sync and async. Ready's own validation too."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from collimate_rl import (
    AsyncGatewayClient,
    AsyncTemplate,
    GatewayClient,
    GatewayError,
    Ready,
    Template,
    TemplateBakeFailed,
    TemplateHandle,
    TemplateStatus,
)
from collimate_rl.gateway_flows.status import BAKE_PHASES
from collimate_rl.local_backend import LocalCollimateBackend

PRO = "col_pro_flows-bake"
DEMO = "col_demo_flows-bake"
FAST = 0.05  # poll interval: the local bakes take well under a second


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with LocalCollimateBackend(api_keys=[PRO, DEMO]) as be:
        yield be


@pytest.fixture
def pro(backend: LocalCollimateBackend) -> Iterator[GatewayClient]:
    with GatewayClient(api_key=PRO, base_url=backend.base_url) as client:
        yield client


def test_ready_to_wire_and_validation() -> None:
    assert Ready().to_wire() is None
    assert Ready(cmd="true", ports=[8080], env={"A": "1"}).to_wire() == {
        "cmd": "true",
        "ports": [8080],
        "env": {"A": "1"},
    }
    assert Ready(http="http://localhost:8080/").networked and not Ready(cmd="x").networked
    with pytest.raises(ValueError, match="ports"):
        Ready(ports=[0])
    with pytest.raises(ValueError, match="http_timeout_s"):
        Ready(http_timeout_s=-1)
    with pytest.raises(ValueError, match="width"):
        Template.bake(None, name="x", image="python:3.11", width=0)  # type: ignore[arg-type]


def test_bake_walks_the_phases_to_a_full_pool(pro: GatewayClient) -> None:
    ready = Ready(cmd="python3 -c 'import json'", env={"BAKED": "1"})
    handle = Template.bake(pro, name="numpy-ready", image="python:3.11", ready=ready, width=2)
    assert isinstance(handle, TemplateHandle) and handle.declared == 2
    seen: list[TemplateStatus] = []
    final = handle.wait(120, poll_interval=FAST, on_update=seen.append)
    assert final.converged and final.live and final.total >= 2 and final.declared == 2
    phases = [s.phase for s in seen]
    ranks = [BAKE_PHASES.index(p) for p in phases]
    assert ranks == sorted(ranks) and phases[-1] == "Live"  # never goes backwards
    assert sum(n["warm"] for n in final.per_node) == final.warm
    assert final.raw["ready"] == ready.to_wire()  # the server's echo, field for field
    again = Template.bake(pro, name="numpy-ready", image="python:3.11", ready=ready, width=2)
    assert again.id == handle.id  # idempotent
    with pro.session(handle) as sess:  # a handle opens a session directly
        assert sess.exec("print('baked')").stdout == "baked\n"
    pro.delete_template(handle.id)


def test_a_failed_bake_raises_with_the_build_error(pro: GatewayClient) -> None:
    handle = Template.bake(
        pro, name="broken", image="python:3.11", ready=Ready(cmd="exit 3"), width=1
    )
    with pytest.raises(TemplateBakeFailed) as info:
        handle.wait(120, poll_interval=FAST)
    st = info.value.template_status
    assert st.failed and st.build_fails >= 1 and "3" in st.error
    assert info.value.code == "template_bake_failed" and st.error in str(info.value)
    # without fail_fast the wait keeps polling (the server may retry) until its timeout
    with pytest.raises(TimeoutError, match="Failed"):
        handle.wait(0.3, poll_interval=FAST, fail_fast=False)
    pro.delete_template(handle.id)


def test_a_template_deleted_mid_wait_is_a_failed_bake(pro: GatewayClient) -> None:
    handle = Template.bake(pro, name="short-lived", image="python:3.11", width=1)
    handle.wait(120, poll_interval=FAST, until="live")
    pro.delete_template(handle.id)
    with pytest.raises(TemplateBakeFailed, match="disappeared"):
        handle.wait(5, poll_interval=FAST)
    with pytest.raises(GatewayError) as info:
        handle.wait(5, poll_interval=FAST, fail_fast=False)
    assert info.value.code == "not_found"


def test_status_and_attach_from_a_fresh_client(
    backend: LocalCollimateBackend, pro: GatewayClient
) -> None:
    handle = Template.bake(pro, name="attach-me", image="python:3.11", width=1)
    handle.wait(120, poll_interval=FAST)
    with GatewayClient(api_key=PRO, base_url=backend.base_url) as other:
        st = Template.status(other, handle.id)
        assert st.id == handle.id and st.name == "attach-me" and st.live
        attached = Template.attach(other, handle.id)
        assert attached.image == "python:3.11" and attached.wait(10, poll_interval=FAST).converged
    with GatewayClient(api_key=DEMO, base_url=backend.base_url) as stranger:
        with pytest.raises(GatewayError) as info:
            Template.attach(stranger, handle.id)
        assert info.value.code == "not_found"  # another tenant's template
    pro.delete_template(handle.id)


def test_demo_keys_do_not_bake(backend: LocalCollimateBackend) -> None:
    with GatewayClient(api_key=DEMO, base_url=backend.base_url) as demo:
        with pytest.raises(GatewayError) as info:
            Template.bake(demo, name="mine", image="python:3.11", width=1)
        assert info.value.code == "forbidden"
        with pytest.raises(GatewayError) as info:
            Template.bake(demo, name="nic", image="python:3.11", ready=Ready(network=True), width=1)
        assert info.value.code == "network_requires_pro"


def test_async_bake_status_attach(backend: LocalCollimateBackend) -> None:
    async def main() -> None:
        async with AsyncGatewayClient(api_key=PRO, base_url=backend.base_url) as client:
            handle = await AsyncTemplate.bake(
                client, name="async-bake", image="python:3.11", ready=Ready(cmd="true"), width=1
            )
            seen: list[str] = []
            final = await handle.wait(
                120, poll_interval=FAST, on_update=lambda s: seen.append(s.phase)
            )
            assert final.converged and seen[-1] == "Live"
            assert (await AsyncTemplate.status(client, handle.id)).live
            attached = await AsyncTemplate.attach(client, handle.id)
            assert attached.name == "async-bake"
            broken = await AsyncTemplate.bake(
                client, name="async-broken", image="python:3.11", ready=Ready(cmd="false"), width=1
            )
            with pytest.raises(TemplateBakeFailed):
                await broken.wait(120, poll_interval=FAST)
            for tid in (handle.id, broken.id):
                await client.delete_template(tid)

    asyncio.run(main())
