"""Infrastructure failures are never task failures: by default the step
raises; with ``on_infra_error: zero`` the episode ends with 0.0, flagged in
its metadata and in the metrics. The backend is really stopped."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest

from collimate_rl import CollimateError
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.skyrl import CollimateCodeEnv


@pytest.fixture(params=["tcp", "unix"])
def dead_target(request: pytest.FixtureRequest) -> dict[str, Any]:
    """A backend that served, then stopped: its address now refuses."""
    with tempfile.TemporaryDirectory(prefix="crl-dead-") as tmp:
        with LocalCollimateBackend(socket_path=Path(tmp) / "d.sock") as b:
            addr = {"base_url": b.base_url} if request.param == "tcp" else {"socket": b.socket_path}
        yield addr


def test_by_default_an_infra_failure_raises(
    rows: Any, skyrl_gym_module: Any, dead_target: dict[str, Any]
) -> None:
    env = skyrl_gym_module.make(
        "collimate_code", env_config=dead_target, extras=rows.extras(rows.mbpp(1))
    )
    with pytest.raises(CollimateError):
        env.step(rows.RIGHT)


def test_zero_gives_a_flagged_zero_and_ends_the_episode(
    rows: Any, skyrl_gym_module: Any, dead_target: dict[str, Any]
) -> None:
    cfg = {**dead_target, "on_infra_error": "zero"}
    env = skyrl_gym_module.make(
        "collimate_code", env_config=cfg, extras=rows.extras(rows.mbpp(1), 3)
    )
    out = env.step(rows.RIGHT)
    assert (out["reward"], out["done"], out["observations"]) == (0.0, True, [])
    md = out["metadata"]
    assert md["verdict"] == "infra_error" and md["infra_error"] is True
    assert "CollimateError" in md["error"]
    metrics = env.get_metrics()
    assert metrics["infra_error"] == 1.0 and metrics["passed"] == 0.0


def test_zero_keeps_infra_failures_out_of_the_pass_rate(
    rows: Any, skyrl_gym_module: Any, dead_target: dict[str, Any], target: dict[str, Any]
) -> None:
    failed = skyrl_gym_module.make(
        "collimate_code",
        env_config={**dead_target, "on_infra_error": "zero"},
        extras=rows.extras(rows.mbpp(1)),
    )
    failed.step(rows.RIGHT)
    passed = skyrl_gym_module.make(
        "collimate_code", env_config=target, extras=rows.extras(rows.mbpp(1))
    )
    passed.step(rows.RIGHT)
    from skyrl_gym.metrics import aggregate_for_environment

    agg = aggregate_for_environment("collimate_code", [failed.get_metrics(), passed.get_metrics()])
    assert agg["infra_errors"] == 1.0 and agg["infra_error_rate"] == 0.5
    assert agg["pass_rate"] == 1.0 and agg["mean_reward"] == 1.0
    assert agg["episodes"] == 2.0 and agg["grade_ms_max"] > 0.0


def test_a_backend_stopped_mid_episode_is_an_infra_failure(
    rows: Any, skyrl_gym_module: Any
) -> None:
    with tempfile.TemporaryDirectory(prefix="crl-mid-") as tmp:
        backend = LocalCollimateBackend(socket_path=Path(tmp) / "m.sock").start()
        try:
            cfg = {"socket": backend.socket_path, "on_infra_error": "zero"}
            env = skyrl_gym_module.make(
                "collimate_code", env_config=cfg, extras=rows.extras(rows.mbpp(1), 2)
            )
            assert env.step(rows.WRONG)["done"] is False  # graded: feedback, next turn
        finally:
            backend.stop()
        out = env.step(rows.RIGHT)
        assert out["metadata"]["verdict"] == "infra_error" and out["reward"] == 0.0


def test_aggregate_metrics_is_static_and_handles_nothing() -> None:
    assert CollimateCodeEnv.aggregate_metrics([]) == {}
    agg = CollimateCodeEnv.aggregate_metrics(
        [
            {
                "reward": 0.5,
                "passed": 0.0,
                "turns": 2.0,
                "infra_error": 0.0,
                "grade_ms": 10.0,
                "packed": 2.0,
            }
        ]
    )
    assert agg["pass_rate"] == 0.0 and agg["mean_turns"] == 2.0 and agg["packed_rate"] == 1.0
