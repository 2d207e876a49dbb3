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


# --- rows as datasets hold them (issue 24) ------------------------------------------

HE_PROMPT = 'def double(x: int) -> int:\n    """Twice x.\n    >>> double(2)\n    4\n    """\n'
HE_ROW = {
    "task_id": "HumanEval/double",
    "prompt": HE_PROMPT,
    "canonical_solution": "    return 2 * x\n",
    "test": "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(-1) == -2\n",
    "entry_point": "double",
}
#: what ``Dataset.to_json`` writes for a struct column mixing MBPP and KodCode
#: rows: every key of the column, ``null`` where a row has none
NULL_FILLED = [
    {
        "id": "mbpp-add",
        "prompt": "Write add(a, b).",
        "ground_truth": {
            "test_list": ["assert add(1, 2) == 3"],
            "test_setup_code": "",
            "test": None,
        },
    },
    {
        "id": "kodcode-add",
        "prompt": "Write add(a, b).",
        "ground_truth": {
            "test_list": None,
            "test_setup_code": None,
            "test": "from solution import add\n\ndef test_add():\n    assert add(1, 2) == 3\n",
        },
    },
]


def test_a_humaneval_row_in_its_hub_columns_grades_a_body(env: CollimateCodeEnvironment) -> None:
    obs = env.reset(row=HE_ROW)
    assert (obs.problem_id, obs.prompt) == ("HumanEval/double", HE_PROMPT)
    body = env.step(CollimateCodeAction(code=HE_ROW["canonical_solution"]))
    assert (body.reward, body.verdict) == (1.0, "passed"), body.reason
    assert body.reason == "passed 1; 1/1 tests passed"
    env.reset(row=HE_ROW)
    wrong = env.step(CollimateCodeAction(code="    return x + 2\n"))
    assert wrong.reward == 0.0 and wrong.reason.startswith("failed 0; 0/1 tests passed")
    env.reset(row=HE_ROW)  # a whole function, fenced, as a chat model answers
    whole = f"```python\n{HE_PROMPT}    return x * 2\n```"
    assert env.step(CollimateCodeAction(code=whole)).reward == 1.0


def test_join_prompt_off_grades_the_submission_alone(
    env: CollimateCodeEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLLIMATE_CODE_JOIN_PROMPT", "0")
    env.reset(row=HE_ROW)
    assert env.step(CollimateCodeAction(code=HE_ROW["canonical_solution"])).reward == 0.0
    monkeypatch.setenv("COLLIMATE_CODE_JOIN_PROMPT", "sometimes")
    env.reset(row=HE_ROW)
    with pytest.raises(ValueError, match="COLLIMATE_CODE_JOIN_PROMPT must be true or false"):
        env.step(CollimateCodeAction(code="pass"))


@pytest.mark.parametrize(
    ("row", "right"),
    [
        (  # MBPP full: text, test_list with its setup
            {
                "task_id": 9,
                "text": "Write circle(r): the area, 2 decimals.",
                "test_list": ["assert circle(1) == round(math.pi, 2)"],
                "test_setup_code": "import math",
            },
            "def circle(r):\n    return round(3.141592653589793 * r * r, 2)",
        ),
        (  # KodCode: question, test (pytest, from solution)
            {
                "question_id": "Leetcode_1_I",
                "question": "Write add(a, b).",
                "test": "from solution import add\n\ndef test_add():\n    assert add(2, 2) == 4\n",
            },
            "def add(a, b):\n    return a + b",
        ),
        (  # APPS: question, input_output (a JSON string)
            {
                "problem_id": 7,
                "question": "Return twice x.",
                "input_output": json.dumps(
                    {"fn_name": "twice", "inputs": [[1], [4]], "outputs": [[2], [8]]}
                ),
            },
            "def twice(x):\n    return 2 * x",
        ),
        (  # open-r1: problem_statement, verification_info
            {
                "problem_id": "vfc_1",
                "problem_statement": "Print the square of x.",
                "verification_info": {
                    "language": "python",
                    "test_cases": [
                        {"fn_name": None, "input": "3\n", "output": "9\n", "type": "stdin_stdout"}
                    ],
                },
            },
            "x = int(input())\nprint(x * x)",
        ),
    ],
    ids=["mbpp", "kodcode", "apps", "open-r1"],
)
def test_a_row_in_its_hub_columns_is_posed_and_graded(
    env: CollimateCodeEnvironment, row: dict[str, Any], right: str
) -> None:
    obs = env.reset(row=row)
    assert obs.problem_id == str(
        next(row[k] for k in ("task_id", "question_id", "problem_id") if k in row)
    )
    assert env.step(CollimateCodeAction(code=f"```python\n{right}\n```")).reward == 1.0, obs
    env.reset(row=row)
    assert env.step(CollimateCodeAction(code="print()")).reward == 0.0


def test_null_filled_keys_of_a_datasets_export_are_absent(
    env: CollimateCodeEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in NULL_FILLED))
    monkeypatch.setenv("COLLIMATE_CODE_DATASET", str(data))
    monkeypatch.setattr(environment, "_problems", None)
    right = "def add(a, b):\n    return a + b"
    for index, kind in enumerate(("AssertReward", "PytestReward")):
        assert type(load_problems()[index].spec).__name__ == kind
        env.reset(index=index)
        assert env.step(CollimateCodeAction(code=right)).reward == 1.0


def test_a_bad_row_of_the_file_names_its_line_and_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "rows.jsonl"
    bad = {"task_id": "HumanEval/6", "prompt": "p", "test": "the answer is 42"}
    data.write_text(json.dumps(ROW) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(ValueError, match=r"rows.jsonl, line 2: row 'HumanEval/6': ground truth: "):
        load_problems(str(data))


def test_a_real_datasets_export_of_a_mixed_column(
    env: CollimateCodeEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Core's mixed Hub table (MBPP, HumanEval, KodCode, APPS, open-r1 ground
    truths in ONE struct column), exported with ``Dataset.to_json``."""
    pytest.importorskip("datasets")
    from collimate_rl.testing import hub_rows

    mixed = hub_rows.mixed_rows()
    data = tmp_path / "mixed.jsonl"
    mixed.dataset.to_json(str(data))
    assert '"test_list":null' in data.read_text()  # Arrow's unified keys, as users get them
    monkeypatch.setenv("COLLIMATE_CODE_DATASET", str(data))
    monkeypatch.setattr(environment, "_problems", None)
    for index, case in enumerate(mixed.cases):
        answers = {"right": case.right, "wrong": case.wrong}
        rewards = {}
        for name, code in answers.items():
            env.reset(index=index)
            rewards[name] = env.step(CollimateCodeAction(code=code)).reward
        assert rewards["right"] == 1.0 and rewards["wrong"] < 1.0, (case.source, rewards)


def test_the_observation_never_quotes_the_tests(env: CollimateCodeEnvironment) -> None:
    """The grader may report a failing assert with its statement (for the
    trainer's logs); the policy's observation leaves such a message out."""
    secret = "assert sq(40) == 1600  # SECRET-TEST-MARK"
    env.reset(row={"id": "s", "prompt": "Write sq(x).", "ground_truth": {"test_list": [secret]}})
    obs = env.step(CollimateCodeAction(code="def sq(x):\n    return x"))
    assert obs.reward == 0.0 and obs.tests[0]["reason"] == "wrong_answer"
    assert "SECRET-TEST-MARK" not in obs.model_dump_json() and "sq(40)" not in obs.reason
    assert obs.reason.startswith("failed 0; 0/1 tests passed; first failure: test 0 wrong_answer")
