"""The TRL environments (``environment_factory``) and the plain ``python``
tool (``tools=``), driven as TRL drives them, against a real local backend
over TCP and a unix socket.

TRL itself (with torch) drives them in ``tests_trainer/``; here, without
torch, the tool surface is read the way TRL reads it (public functions of
the class), the rewards go through TRL's own ``_calculate_rewards`` from
its wheel (``conftest.py``), and infrastructure failures are injected.
"""

from __future__ import annotations

import inspect
import pickle
import time
import typing
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from collimate_rl import CollimateClient, CollimateError
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.trl import (
    CodeEnvironment,
    CollimateReward,
    PythonEnvironment,
    python,
    python_tool,
)
from collimate_rl.trl import environment as environment_module

MBPP = {"test_list": ["assert add(1, 2) == 3", "assert add(-1, 1) == 0"]}
RIGHT_ADD = "def add(a, b):\n    return a + b\n"
WRONG_ADD = "def add(a, b):\n    return a - b\n"
HUMANEVAL_PROMPT = 'def add(x: int, y: int):\n    """Add two numbers x and y."""\n'
HUMANEVAL_TEST = "def check(candidate):\n    assert candidate(2, 3) == 5\n"


def trl_tools(env: Any) -> dict[str, Callable[..., Any]]:
    """The tools TRL makes of an environment (``GRPOTrainer`` 1.x: the public
    functions of its class, ``reset`` and ``get_reward`` aside)."""
    return {
        name: getattr(env, name)
        for name, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }


def row(**columns: Any) -> dict[str, Any]:
    """A conversational dataset row, as TRL passes it to ``reset``."""
    return {"prompt": [{"role": "user", "content": "Write add(a, b)."}], **columns}


@pytest.fixture
def envs() -> Iterator[list[Any]]:
    made: list[Any] = []
    yield made
    for env in made:
        env._close()


def test_the_tools_trl_sees(target: dict[str, str]) -> None:
    assert set(trl_tools(PythonEnvironment(**target))) == {"python"}
    assert set(trl_tools(CodeEnvironment(**target))) == {"python", "submit"}
    for tool in (*trl_tools(CodeEnvironment()).values(), python):
        # what transformers' get_json_schema needs: typed arguments and return,
        # a description and an Args: entry for each argument
        hints = typing.get_type_hints(tool)
        assert hints == {"code": str, "return": str}
        doc = inspect.getdoc(tool) or ""
        assert doc.split("\n")[0] and "\nArgs:\n    code: " in doc and "\nReturns:\n" in doc
    assert python.__name__ == "python"


def test_state_kept_across_one_rollouts_calls_and_rollouts_isolated(
    target: dict[str, str], envs: list[Any]
) -> None:
    a, b = PythonEnvironment(**target), PythonEnvironment(**target)
    envs += [a, b]
    for env in (a, b):
        assert env.reset(**row()) is None
    assert a.python("import math\nx = 41") == "(no output)"
    assert a.python("print(x + 1)\nmath.factorial(3)") == "42\n6"
    assert "NameError" in b.python("print(x)")
    assert (a.calls, b.calls) == (2, 1)
    assert a.infra_error is None and b.infra_error is None


def test_reset_closes_the_last_rollouts_interpreter(
    backend: LocalCollimateBackend, envs: list[Any]
) -> None:
    env = PythonEnvironment(base_url=backend.base_url)
    envs.append(env)
    env.reset(**row())
    env.python("x = 1")
    assert env._tool is not None and env._tool._sandbox is not None
    session = env._tool._sandbox.session_id
    env.reset(**row())
    assert env._tool is None and env.calls == 0
    with CollimateClient(backend.base_url) as fresh, pytest.raises(CollimateError):
        fresh.get_session(str(session))  # reaped with the rollout
    assert "NameError" in env.python("x")  # a fresh interpreter


@pytest.mark.parametrize(
    ("answer", "reward"), [(RIGHT_ADD, 1.0), (WRONG_ADD, 0.0), ("def add(a, b):\n    1/0\n", 0.0)]
)
def test_get_reward_grades_the_submitted_answer(
    target: dict[str, str], envs: list[Any], answer: str, reward: float
) -> None:
    env = CodeEnvironment("test_list", **target)
    envs.append(env)
    env.reset(**row(test_list=MBPP["test_list"], task_id="Mbpp/2"))
    assert "NameError" not in env.python("def add(a, b):\n    return a + b\nprint(add(1, 2))")
    assert env.submit(code="this draft is replaced") and env.submit(code=answer)
    assert env.get_reward() == reward  # the last submission's grade
    assert env.result is not None and env.reason == env.result.explain()
    assert env._tool is None  # the rollout is over: its interpreter is closed


def test_get_reward_humaneval_body_joined_to_the_prompt(target: dict[str, str]) -> None:
    env = CodeEnvironment("test", **target)
    columns = {"test": HUMANEVAL_TEST, "entry_point": "add", "task_id": "HumanEval/53"}
    env.reset(prompt=HUMANEVAL_PROMPT, **columns)
    env.submit("    return x + y\n")
    assert env.get_reward() == 1.0
    env.reset(prompt=HUMANEVAL_PROMPT, **columns)
    env.submit("    return x * y\n")
    assert env.get_reward() == 0.0


def test_a_grade_still_running_at_reset_is_dropped(target: dict[str, str]) -> None:
    env = CodeEnvironment(**target)
    env.reset(**row(ground_truth=MBPP))
    env.submit(RIGHT_ADD)  # graded in the background from here
    env.reset(**row(ground_truth=MBPP))  # the next rollout: that grade is not its own
    assert env.answer is None and env.get_reward() == 0.0


def test_no_submission_is_the_policys_failure(target: dict[str, str]) -> None:
    env = CodeEnvironment(ground_truth=MBPP, **target)  # the ground truth given at construction
    env.reset(**row())
    assert env.get_reward() == 0.0 and env.reason == "failed: no solution submitted"


def test_a_row_no_reward_kind_accepts_raises_at_reset_naming_it() -> None:
    env = CodeEnvironment("ground_truth")
    with pytest.raises(ValueError, match=r"task_id='T/9'"):
        env.reset(**row(ground_truth={"nothing": "gradable"}, task_id="T/9"))
    with pytest.raises(KeyError, match="no column 'ground_truth'"):
        env.reset(**row())


def test_tool_infra_failure_shown_as_an_error_and_the_rollout_left_out(
    backend: LocalCollimateBackend, envs: list[Any]
) -> None:
    env = CodeEnvironment(base_url=backend.base_url)
    envs.append(env)
    env.reset(**row(ground_truth=MBPP))
    env.python("x = 1")
    assert env._tool is not None and env._tool._sandbox is not None
    # fault: the sandbox disappears under the rollout (deleted server-side)
    with CollimateClient(backend.base_url) as other:
        other.delete_session(str(env._tool._sandbox.session_id))
    with pytest.raises(CollimateError):  # TRL turns this into {"error": str(exc)}
        env.python("print(x)")
    assert env.infra_error is not None and "python call 2" in env.infra_error
    with pytest.raises(CollimateError, match="failed"):  # the rollout's sandbox is gone
        env.python("print(1)")
    env.submit(RIGHT_ADD)
    assert env.get_reward() is None and env.reason.startswith("infra_error")
    env.reset(**row(ground_truth=MBPP))  # the next rollout starts clean
    assert env.infra_error is None and env.python("print(2)") == "2"


def test_grading_infra_failure_is_none_never_zero(
    target: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def unreachable(*args: Any, **kwargs: Any) -> Any:
        raise CollimateError("injected: the grader is unreachable")

    env = CodeEnvironment(**target)
    env.reset(**row(ground_truth=MBPP))
    monkeypatch.setattr(environment_module, "grade", unreachable)
    env.submit(RIGHT_ADD)  # the grade starts here, in the background
    assert env.get_reward() is None
    assert env.infra_error == "grading: injected: the grader is unreachable"


def test_trls_reward_call_leaves_out_rollouts_with_infra_failures(
    make_trainer: Callable[[list[Any]], Any], target: dict[str, str], envs: list[Any]
) -> None:
    """TRL's own ``_calculate_rewards`` hands the rollouts' environments to
    every reward function as ``environments=``: ``CollimateReward`` answers
    None (NaN) for a rollout whose sandbox failed."""
    reward = CollimateReward("ground_truth", **target)
    trainer = make_trainer([reward])
    ok, failed = CodeEnvironment(**target), CodeEnvironment(**target)
    envs += [ok, failed]
    for env in (ok, failed):
        env.reset(**row(ground_truth=MBPP))
    failed._fail("injected")
    trainer.environments = [ok, failed]
    completion = [{"role": "assistant", "content": f"```python\n{RIGHT_ADD}```"}]
    inputs = [row(ground_truth=MBPP)] * 2
    rows = trainer.calculate_rewards(inputs, [r["prompt"] for r in inputs], [completion] * 2)
    assert rows[0] == [1.0]
    assert rows[1][0] != rows[1][0]  # NaN: left out


def test_idle_interpreters_are_reaped_and_the_rollout_left_out(
    target: dict[str, str], envs: list[Any]
) -> None:
    idle, busy = PythonEnvironment(**target), PythonEnvironment(idle_timeout=None, **target)
    envs += [idle, busy]
    for env in (idle, busy):
        env.reset(**row())
        env.python("x = 1")
    environment_module._sweep(time.monotonic() + 3600)  # an hour later
    assert idle._tool is None and idle.infra_error is not None and "idle" in idle.infra_error
    assert busy._tool is not None and busy.python("print(x)") == "1"
    with pytest.raises(CollimateError):
        idle.python("print(x)")


def test_environments_pickle_without_their_sandbox(target: dict[str, str]) -> None:
    env = CodeEnvironment("test_list", **target)
    env.reset(**row(test_list=MBPP["test_list"]))
    env.python("x = 1")
    copy = pickle.loads(pickle.dumps(env))
    env._close()
    assert copy._tool is None and copy.column == "test_list"
    copy.reset(**row(test_list=MBPP["test_list"]))
    copy.submit(RIGHT_ADD)
    assert copy.get_reward() == 1.0


def test_the_plain_tool_runs_each_call_in_a_fresh_interpreter(target: dict[str, str]) -> None:
    tool = python_tool(**target)
    assert tool.__name__ == "python" and tool.__doc__ == python.__doc__
    assert tool(code="x = 6\nprint(x * 7)") == "42"
    assert "NameError" in tool("print(x)")
    assert "ZeroDivisionError" in tool("1 / 0")


def test_the_plain_tool_raises_infra_failures_for_trl_to_show(
    backend: LocalCollimateBackend,
) -> None:
    tool = python_tool(base_url=backend.base_url, template="no-such-template")
    with pytest.raises(CollimateError):
        tool("print(1)")


def test_the_default_plain_tool_uses_the_environments_target(
    backend: LocalCollimateBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLLIMATE_SERVE_URL", backend.base_url)
    for name in ("COLLIMATE_SERVE_SOCKET", "COLLIMATE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("collimate_rl.trl.clients._blocking", {})
    assert python("print(sum(range(5)))") == "10"
    assert pickle.loads(pickle.dumps(python)) is python
