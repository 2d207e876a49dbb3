"""The code environment in process: rows -> problems, reset's choices, step's
grading through a real local backend, per-test feedback, and the manifest
OpenEnv's discovery reads."""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from collimate_code import CollimateCodeAction, CollimateCodeEnv, CollimateCodeObservation
from collimate_code.problems import load_problems, problem_from_row
from collimate_code.server import environment, grader
from collimate_code.server.environment import CollimateCodeEnvironment, feedback_from

from collimate_rl import CollimateError, GradeResult
from collimate_rl.local_backend import LocalCollimateBackend

ROW = {"id": "sq", "prompt": "Write sq(x).", "ground_truth": {"test_list": ["assert sq(3) == 9"]}}


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with LocalCollimateBackend() as b:
        yield b


@pytest.fixture
def env(
    backend: LocalCollimateBackend, monkeypatch: pytest.MonkeyPatch
) -> CollimateCodeEnvironment:
    """An environment grading on the backend, as the server's env_vars say."""
    monkeypatch.setenv("COLLIMATE_SERVE_URL", backend.base_url)
    monkeypatch.setattr(grader, "_client", None)
    return CollimateCodeEnvironment()


def test_the_manifest_names_what_discovery_imports() -> None:
    import yaml  # OpenEnv's own dependency, as its discovery reads the file

    manifest = yaml.safe_load(
        resources.files("collimate_code").joinpath("openenv.yaml").read_text()
    )
    assert manifest["name"] == "collimate_code" and manifest["spec_version"] == 1
    assert manifest["action"] == CollimateCodeAction.__name__
    assert manifest["observation"] == CollimateCodeObservation.__name__
    # discovery imports <module>.client and the class named after the env
    assert CollimateCodeEnv.__module__ == "collimate_code.client"
    assert CollimateCodeEnv.__name__ == "CollimateCodeEnv"


def test_the_server_is_openenvs_create_app_with_concurrent_sessions() -> None:
    from collimate_code.server.app import app
    from fastapi.testclient import TestClient

    assert CollimateCodeEnvironment.SUPPORTS_CONCURRENT_SESSIONS is True
    with TestClient(app) as http:
        assert http.get("/health").json()["status"] == "healthy"
        with http.websocket_connect("/ws") as ws:
            ws.send_text(json.dumps({"type": "reset", "data": {"index": 1}}))
            answer = json.loads(ws.receive_text())
    assert answer["type"] == "observation"
    assert answer["data"]["observation"]["problem_id"] == "reverse-words"


def test_reset_poses_rows_indices_seeds_and_turns(env: CollimateCodeEnvironment) -> None:
    shipped = [p.problem_id for p in load_problems()]
    assert env.reset(row=ROW).problem_id == "sq"
    assert env.reset(index=2).problem_id == shipped[2]
    assert env.reset(index=len(shipped) + 1).problem_id == shipped[1]  # wraps
    assert env.reset(seed=7).problem_id == env.reset(seed=7).problem_id
    turns = {env.reset().problem_id for _ in shipped}
    assert turns == set(shipped)
    obs = env.reset(row=ROW, episode_id="ep-1")
    assert env.state.episode_id == "ep-1" and env.state.step_count == 0
    # the policy sees the prompt; the tests stay on the server
    assert "sq(3) == 9" not in obs.model_dump_json()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"row": {"prompt": "p"}}, "no ground truth"),
        ({"row": {"ground_truth": {"test_list": ["assert 1"]}}}, "'prompt' must be"),
        ({"row": "text"}, "must be an object"),
        ({"index": "1"}, "index must be an integer"),
        ({"max_attempts": 0}, "max_attempts must be a positive integer"),
        ({"difficulty": "hard"}, r"unknown argument\(s\) \['difficulty'\]"),
    ],
)
def test_reset_names_what_is_wrong(
    env: CollimateCodeEnvironment, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        env.reset(**kwargs)


def test_step_grades_right_wrong_and_partial(env: CollimateCodeEnvironment) -> None:
    env.reset(row=ROW)
    right = env.step(CollimateCodeAction(code="```python\ndef sq(x):\n    return x * x\n```"))
    assert (right.reward, right.done, right.verdict) == (1.0, True, "passed")
    assert right.tests == [{"index": 0, "passed": True}]
    env.reset(index=0, max_attempts=2)  # add: 3 asserts
    partial = env.step(CollimateCodeAction(code="def add(a, b):\n    return 3 if a == 1 else 7"))
    assert partial.reward == pytest.approx(1 / 3) and not partial.done
    assert (partial.passed, partial.total, partial.attempts_left) == (1, 3, 1)
    assert [t["passed"] for t in partial.tests] == [True, False, False]
    assert partial.tests[1]["reason"] == "wrong_answer"
    last = env.step(CollimateCodeAction(code="import os\nos._exit(0)"))
    assert last.reward == 0.0 and last.done and env.state.step_count == 2
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(CollimateCodeAction(code="def add(a, b): return a + b"))


def test_step_before_reset_is_an_error(env: CollimateCodeEnvironment) -> None:
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(CollimateCodeAction(code="pass"))


def test_an_unreachable_grader_raises_instead_of_scoring(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLLIMATE_SERVE_URL", "http://127.0.0.1:9")
    monkeypatch.setattr(grader, "_client", None)
    env = CollimateCodeEnvironment()
    env.reset(row=ROW)
    with pytest.raises(CollimateError):
        env.step(CollimateCodeAction(code="def sq(x):\n    return x * x"))


def test_the_grader_template_and_timeout_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert grader.grader_template() == "dkr-python311"
    monkeypatch.setenv(grader.TEMPLATE_ENV, "py")
    monkeypatch.setenv(grader.TIMEOUT_ENV, "12")
    assert (grader.grader_template(), grader.grader_timeout()) == ("py", 12)
    # a step's own timeout can only shorten the grade's
    assert environment._timeout(None) == 12
    assert environment._timeout(5.5) == 5
    assert environment._timeout(100.0) == 12
    monkeypatch.setenv(grader.TIMEOUT_ENV, "soon")
    with pytest.raises(ValueError, match="whole seconds"):
        grader.grader_timeout()


def test_a_dataset_file_replaces_the_shipped_problems(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps(ROW) + "\n\n" + json.dumps({**ROW, "id": "sq2"}) + "\n")
    monkeypatch.setenv("COLLIMATE_CODE_DATASET", str(data))
    assert [p.problem_id for p in load_problems()] == ["sq", "sq2"]
    data.write_text(json.dumps(ROW) + "\n{not json\n")
    with pytest.raises(ValueError, match=r"rows.jsonl, line 2"):
        load_problems()


def test_a_skyrl_shaped_row_is_read() -> None:
    row = {"prompt": "p", "reward_spec": {"ground_truth": {"test_list": ["assert f() == 1"]}}}
    assert problem_from_row(row, default_id="r7").problem_id == "r7"


def test_feedback_from_the_graders_report() -> None:
    result = GradeResult(
        reward=0.5,
        detail={
            "passed": 2,
            "total": 4,
            "failed_indices": [1, 3],
            "failed": [{"index": 1, "reason": "exception", "message": "ZeroDivisionError"}],
        },
    )
    passed, total, tests = feedback_from(result)
    assert (passed, total) == (2, 4)
    assert tests == [
        {"index": 0, "passed": True},
        {"index": 1, "passed": False, "reason": "exception", "message": "ZeroDivisionError"},
        {"index": 2, "passed": True},
        {"index": 3, "passed": False},
    ]
    assert feedback_from(GradeResult(reward=0.0)) == (0, 0, [])
