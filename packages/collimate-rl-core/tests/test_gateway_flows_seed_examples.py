"""The earlier release's README examples for environments/sessions and for
per-rollout egress, run against the local backend's gateway wire with a pro
key. Each example is copied as its README shows it; only the target (the
local catalog has ``py``, not ``python``; a bake needs an image the local
backend can run) and the key/origin (from the environment) differ, plus
what is noted where it differs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from collimate_rl import GatewayClient, Sandbox
from collimate_rl.cli import main as collimate
from collimate_rl.local_backend import LocalCollimateBackend

PRO = "col_pro_seed-examples"


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with LocalCollimateBackend(api_keys=[PRO]) as be:
        yield be


@pytest.fixture
def gateway_env(backend: LocalCollimateBackend, monkeypatch: pytest.MonkeyPatch) -> str:
    """connect() resolves to the local gateway with the pro key."""
    for name in ("COLLIMATE_SERVE_SOCKET", "COLLIMATE_SERVE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLLIMATE_API_KEY", PRO)
    monkeypatch.setenv("COLLIMATE_BASE_URL", backend.base_url)
    return backend.base_url


def _environments_example(client: GatewayClient, width: int) -> int:
    # --- the README example (width as passed) ---
    with client.env("python", width=width) as env:  # noqa: SIM117  # declare the session width
        with env.sandbox() as sess:  # one sandbox on it
            group = sess.fork_group(width)  # ... your GRPO fan-out
            widths = len(group)
            seeds = set(group.seeds)
    # exit -> env.release(): capacity relaxes to baseline immediately
    # --- end of the example ---
    assert len(seeds) == 1  # the default seed mode is crn: one shared seed
    return widths


def test_environments_and_sessions_example_on_a_pro_key(backend: LocalCollimateBackend) -> None:
    # Width 64 (the README says 512) keeps the default run light on a shared
    # machine; 64 is still two fork calls at the pro cap of 32. The verbatim
    # 512 (16 fork calls, 513 sandboxes) runs below, marked slow.
    with GatewayClient(api_key=PRO, base_url=backend.base_url) as client:
        assert _environments_example(client, 64) == 64
        assert client.list_sandboxes() == []  # the session's exit took its group


@pytest.mark.slow
def test_environments_and_sessions_example_verbatim_width(backend: LocalCollimateBackend) -> None:
    with GatewayClient(api_key=PRO, base_url=backend.base_url) as client:
        assert _environments_example(client, 512) == 512
        assert client.list_sandboxes() == []


def test_per_rollout_egress_example(gateway_env: str, capsys: pytest.CaptureFixture[str]) -> None:
    # `collimate bake --image my-tool:latest --network --width 64`, with an
    # image the local backend can run
    assert collimate(["bake", "--image", "python:3.11", "--network", "--width", "64"]) == 0
    out = capsys.readouterr().out
    template = out.split("baking ", 1)[1].split()[0]
    assert "Live" in out

    ran = []
    # --- the README examples (target: the template just baked) ---
    with Sandbox(template, egress={"mode": "none"}) as sb:  # no egress at all
        ran.append(sb.exec("print('none')").stdout)
    with Sandbox(template, egress={"preset": "rl-leakage"}) as sb:  # block answer sources
        ran.append(sb.exec("print('rl-leakage')").stdout)
    with Sandbox(template, egress={"allow": ["pypi.org", "10.20.0.0/16"]}) as sb:
        ran.append(sb.exec("print('allow')").stdout)
    # --- end of the examples ---
    assert ran == ["none\n", "rl-leakage\n", "allow\n"]
    with GatewayClient() as client:  # the same key and origin, from the environment
        assert client.tier == "pro" and client.list_sandboxes() == []
        client.delete_template(template)
