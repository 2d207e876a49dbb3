"""Per-rollout egress: policies checked client-side (field named in the
error) and sent to a real local backend: two forks of one networked template
under different policies, the demo tier's refusals; sync and async."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from collimate_rl import (
    RL_LEAKAGE,
    AsyncGatewayClient,
    AsyncSandbox,
    GatewayClient,
    GatewayError,
    Ready,
    Sandbox,
    Template,
    egress_policy,
)
from collimate_rl.local_backend import LocalCollimateBackend

PRO = "col_pro_flows-egress"
DEMO = "col_demo_flows-egress"


@pytest.mark.parametrize(
    ("given", "sent"),
    [
        (None, None),
        ({}, {"mode": "open"}),
        ({"mode": "none"}, {"mode": "none"}),
        (
            {"allow": ["pypi.org", "10.20.0.0/16"]},
            {"mode": "allowlist", "allow": ["pypi.org", "10.20.0.0/16"]},
        ),
        ({"deny": ["github.com"]}, {"mode": "denylist", "deny": ["github.com"]}),
        (RL_LEAKAGE, {"mode": "denylist", "preset": "rl-leakage"}),
        (
            {"mode": "denylist", "preset": "rl-leakage", "deny": ["x.org"]},
            {"mode": "denylist", "deny": ["x.org"], "preset": "rl-leakage"},
        ),
    ],
)
def test_policies_are_spelled_out(given: object, sent: object) -> None:
    assert egress_policy(given) == sent  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"mode": "closed"}, "egress.mode"),
        ({"allow": "pypi.org"}, "egress.allow"),
        ({"deny": [""]}, "egress.deny"),
        ({"mode": "none", "allow": ["a"]}, "egress.allow"),
        ({"allow": ["a"], "preset": "rl-leakage"}, "egress.preset"),
        ({"preset": ""}, "egress.preset"),
        ({"allowlist": ["a"]}, "unknown key"),
        (["none"], "mapping"),
    ],
)
def test_bad_policies_name_the_field(bad: object, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        egress_policy(bad)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with LocalCollimateBackend(api_keys=[PRO, DEMO]) as be:
        yield be


@pytest.fixture(scope="module")
def networked(backend: LocalCollimateBackend) -> Iterator[str]:
    with GatewayClient(api_key=PRO, base_url=backend.base_url) as client:
        handle = Template.bake(
            client, name="nic", image="python:3.11", ready=Ready(network=True), width=2
        )
        handle.wait(120, poll_interval=0.05)
        yield handle.id
        client.delete_template(handle.id)


def test_a_bad_policy_fails_before_any_request(backend: LocalCollimateBackend) -> None:
    with GatewayClient(api_key=PRO, base_url=backend.base_url) as client:
        with pytest.raises(ValueError, match=r"egress\.mode"):
            Sandbox("py", client=client, egress={"mode": "closed"})
        with pytest.raises(ValueError, match=r"egress\.allow"):
            client.session("py", egress={"allow": "x"})
        assert client.list_sandboxes() == []


def _probe(port: int) -> str:
    """Guest code: can the clone reach the backend's own TCP port?"""
    return (
        "import socket\n"
        "s = socket.socket()\n"
        "try:\n"
        f"    s.connect(('127.0.0.1', {port})); print('reached')\n"
        "except OSError:\n"
        "    print('blocked')\n"
    )


def test_forks_of_one_template_run_different_policies(
    backend: LocalCollimateBackend, networked: str
) -> None:
    probe = _probe(int(backend.port or 0))
    with GatewayClient(api_key=PRO, base_url=backend.base_url) as client:
        with (
            Sandbox(networked, client=client, egress={"mode": "open"}) as open_,
            Sandbox(networked, client=client, egress={"mode": "none"}) as closed,
            Sandbox(networked, client=client, egress=RL_LEAKAGE) as leak_safe,
            Sandbox(networked, client=client, egress={"allow": ["pypi.org"]}) as allow,
        ):
            assert len(client.list_sandboxes()) == 4  # all four at once
            assert open_.exec(probe).stdout == "reached\n"
            # none and allowlist fail closed; the local backend enforces a
            # denylist (the preset) fail-closed too: it has no filtering resolver
            for sb in (closed, leak_safe, allow):
                assert sb.exec(probe).stdout == "blocked\n"
        with client.session(networked, egress=RL_LEAKAGE) as sess:
            assert sess.exec(probe).stdout == "blocked\n"
            assert sess.raw_create is not None
            assert sess.raw_create["egress"]["requested"] == "denylist"
        assert client.list_sandboxes() == []


def test_demo_vsock_only_template_rejects_a_policy(backend: LocalCollimateBackend) -> None:
    with GatewayClient(api_key=DEMO, base_url=backend.base_url) as demo:
        with (
            pytest.raises(GatewayError) as info,
            Sandbox("py", client=demo, egress={"mode": "none"}),
        ):
            pass
        assert info.value.status == 400 and info.value.message == "template is vsock-only"
        assert demo.list_sandboxes() == []


def test_async_sandbox_egress(backend: LocalCollimateBackend, networked: str) -> None:
    async def main() -> None:
        async with AsyncGatewayClient(api_key=PRO, base_url=backend.base_url) as client:
            async with AsyncSandbox(networked, client=client, egress=RL_LEAKAGE) as sb:
                assert (await sb.exec("print(1)")).ok
            with pytest.raises(GatewayError) as info:
                async with AsyncSandbox("py", client=client, egress={"mode": "none"}):
                    pass
            assert info.value.message == "template is vsock-only"
            assert await client.list_sandboxes() == []

    asyncio.run(main())
