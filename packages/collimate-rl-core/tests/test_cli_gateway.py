"""``collimate bake``, ``collimate images`` and ``collimate status`` against
the gateway wire of a real local backend."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pytest

from collimate_rl import TemplateStatus
from collimate_rl.cli import main as collimate
from collimate_rl.gateway_flows.cli import BakeView
from collimate_rl.local_backend import LocalCollimateBackend

PRO = "col_pro_cli-gateway-secret"
DEMO = "col_demo_cli-gateway-secret"


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with LocalCollimateBackend(api_keys=[PRO, DEMO]) as be:
        yield be


@pytest.fixture
def env(backend: LocalCollimateBackend, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("COLLIMATE_API_KEY", PRO)
    monkeypatch.setenv("COLLIMATE_BASE_URL", backend.base_url)
    return backend.base_url


def test_images_table_and_json(env: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert collimate(["images"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["ID", "NAME", "IMAGE", "TIER", "DESCRIPTION"]
    assert any(line.split()[0] == "py" for line in lines[1:])
    assert collimate(["images", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {"py", "sh"} <= {r["id"] for r in rows}


def test_bake_follows_phases_and_pool_then_status(
    env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = collimate(
        [
            "bake",
            "--image",
            "python:3.11",
            "--name",
            "cli-bake",
            "--ready-cmd",
            "true",
            "--width",
            "2",
            "--poll-interval",
            "0.05",
            "--max-exec",
            "8",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    lines = captured.out.splitlines()
    template = lines[0].split()[1]
    assert lines[0].startswith(f"baking {template} (image python:3.11, width 2)")
    progress = [line for line in lines if line.startswith("[")]
    assert progress and "Live" in progress[-1] and "pool 2/2" in progress[-1]
    assert "local: 2+0" in progress[-1]  # the per-node view
    assert len(progress) == len(set(line.split("]", 1)[1] for line in progress))  # changes only
    assert lines[-1] == f"{template} is Live: 2/2 ready; up to 8 execs at once"
    assert PRO not in captured.out + captured.err

    assert collimate(["status", template]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{template} Live: 2/2 ready") and "local: 2 warm, 0 frozen" in out
    assert collimate(["status", template, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["phase"] == "Live"


def test_bake_no_wait_and_a_failed_bake(env: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        collimate(
            ["bake", "--image", "python:3.11", "--name", "cli-nowait", "--width", "1", "--no-wait"]
        )
        == 0
    )
    assert capsys.readouterr().out.startswith("baking cli-nowait")
    code = collimate(
        [
            "bake",
            "--image",
            "python:3.11",
            "--name",
            "cli-broken",
            "--ready-cmd",
            "exit 7",
            "--width",
            "1",
            "--poll-interval",
            "0.05",
        ]
    )
    captured = capsys.readouterr()
    assert code == 1
    assert "failed after" in captured.err and "template_bake_failed" in captured.err
    assert "Failed" in captured.out  # the live view showed the phase


def test_refusals_exit_1_with_the_servers_words(
    backend: LocalCollimateBackend,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("COLLIMATE_BASE_URL", backend.base_url)
    args = ["bake", "--image", "python:3.11", "--network", "--width", "4", "--api-key", DEMO]
    assert collimate(args) == 1
    err = capsys.readouterr().err
    assert "network_requires_pro" in err and DEMO not in err
    assert collimate(["status", "no-such-template", "--api-key", PRO]) == 1
    assert "not_found" in capsys.readouterr().err


def test_a_missing_or_bad_key_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("COLLIMATE_API_KEY", raising=False)
    for argv in (["images"], ["status", "x"], ["bake", "--image", "python:3.11"]):
        assert collimate(argv) == 2
        assert "API key" in capsys.readouterr().err
    assert collimate(["images", "--api-key", "sk-not-collimate"]) == 2
    assert collimate(["bake", "--image", "x", "--api-key", PRO, "--env", "NOEQUALS"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err


def _status(phase: str, warm: int) -> TemplateStatus:
    return TemplateStatus.from_response(
        {
            "id": "t-1",
            "phase": phase,
            "declared": 2,
            "warm": warm,
            "per_node": [{"node": "n1", "warm": warm, "frozen": 0}],
        }
    )


def test_bake_view_prints_changes_only_and_renders_a_live_table() -> None:
    out = io.StringIO()
    view = BakeView(out)
    for st in (_status("Converting", 0), _status("Converting", 0), _status("Live", 2)):
        view(st)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and "Converting" in lines[0] and "pool 2/2" in lines[1]
    live_out = io.StringIO()
    live = BakeView(live_out, live=True)
    live(_status("Live", 2))
    live.close()
    assert "t-1" in live_out.getvalue() and "n1" in live_out.getvalue()
