"""The ``python`` tool of ``collimate_code`` (``tools: ["python"]``): skyrl-gym's
own ``init_tool_groups`` / ``execute_tool`` drive a sandbox kernel that lives
for the episode, against a real local backend (TCP and unix socket)."""

from __future__ import annotations

import pickle
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

from collimate_rl import CollimateError
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.skyrl.clients import shared_client
from collimate_rl.skyrl.harness import run_step
from collimate_rl.skyrl.settings import resolve_settings
from collimate_rl.skyrl.tools import GROUP_NAME, CollimatePythonToolGroup


def call(code: str) -> str:
    """A completion that calls the tool, as skyrl-gym's envs read one."""
    return f"Let me check.\n<tool><python>{code}</python></tool>"


def make(skyrl_gym: Any, rows: Any, cfg: dict[str, Any], max_turns: int = 6, index: int = 1) -> Any:
    return skyrl_gym.make(
        "collimate_code",
        env_config={"tools": ["python"], **cfg},
        extras=rows.extras(rows.mbpp(index), max_turns=max_turns),
    )


def sessions(cfg: dict[str, Any]) -> set[str]:
    """The sessions (sandboxes) live on the target now."""
    client = shared_client(resolve_settings(cfg, {}))
    return {s["session_id"] for s in client.list_sessions()}


def test_the_env_holds_the_group_through_skyrl_gyms_init_tool_groups(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    env = make(skyrl_gym_module, rows, target)
    (group,) = env.tool_groups
    assert isinstance(group, CollimatePythonToolGroup)
    assert env.tool_to_toolgroup == {"python": GROUP_NAME}
    assert group.get_tool_names() == ["python"]
    assert not group.python_tool.started  # nothing runs until the first call


def test_state_is_kept_across_the_turns_of_an_episode(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    env = make(skyrl_gym_module, rows, target)
    env.init([{"role": "user", "content": "Write add(a, b)."}])
    first = env.step(call("import math\ncache = {'n': 41}\nprint('stored')"))
    assert (first["done"], first["reward"]) == (False, 0.0)
    assert first["observations"] == [{"role": "user", "content": "stored"}]
    md = first["metadata"]
    assert (md["verdict"], md["tool_name"], md["tool_group"]) == ("tool_call", "python", GROUP_NAME)
    second = env.step(call("cache['n'] += 1\nmath.factorial(3), cache['n']"))
    assert second["observations"][0]["content"] == "(6, 42)"
    answer = env.step(rows.RIGHT)  # no tool call: an answer, graded as without tools
    assert (answer["done"], answer["reward"], answer["metadata"]["verdict"]) == (
        True,
        1.0,
        "passed",
    )
    metrics = env.get_metrics()
    assert (metrics["turns"], metrics["tool_calls"], metrics["passed"]) == (3.0, 2.0, 1.0)
    assert metrics["tool_ms"] > 0.0
    env.close()


def test_two_envs_do_not_share_an_interpreter(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    envs = [make(skyrl_gym_module, rows, target) for _ in range(2)]
    barrier = threading.Barrier(2, timeout=120)  # a failing thread must not hang the other
    seen: dict[int, str] = {}

    def episode(i: int) -> None:  # both at once, as SkyRL's env threads step them
        env = envs[i]
        barrier.wait()
        env.step(call(f"mine = {i}" + ("\nsecret_of_zero = 'zero'" if i == 0 else "")))
        barrier.wait()  # env 0's secret is defined before env 1 looks for it
        seen[i] = env.step(call("mine"))["observations"][0]["content"]
        seen[i + 2] = env.step(call("secret_of_zero"))["observations"][0]["content"]

    threads = [threading.Thread(target=episode, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (seen[0], seen[1], seen[2]) == ("0", "1", "'zero'")
    assert "NameError: name 'secret_of_zero' is not defined" in seen[3]
    for env in envs:
        env.close()


def test_closing_the_env_reaps_its_sandbox(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    before = sessions(target)
    env = make(skyrl_gym_module, rows, target)
    env.step(call("x = 1"))
    live = sessions(target) - before
    assert len(live) == 1
    env.close()
    assert not live & sessions(target)
    env.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        env.tool_groups[0].python("1")


def test_the_end_of_the_episode_reaps_the_sandbox_before_close(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    before = sessions(target)
    env = make(skyrl_gym_module, rows, target)
    env.step(call("x = 1"))
    assert len(sessions(target) - before) == 1
    assert env.step(rows.RIGHT)["done"] is True
    assert sessions(target) <= before


def test_a_step_that_raises_reaps_the_sandbox(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """SkyRL's generator skips ``close`` when ``step`` raises: the env lets
    the sandbox go itself (the failure injected into grading)."""
    before = sessions(target)
    env = make(skyrl_gym_module, rows, target)
    env.step(call("x = 1"))
    assert len(sessions(target) - before) == 1

    def broken(code: str) -> Any:
        raise OSError("injected")

    monkeypatch.setattr(env, "_grade", broken)
    with pytest.raises(OSError, match="injected"):
        env.step(rows.RIGHT)
    assert sessions(target) <= before


def test_a_cell_error_is_shown_to_the_model_and_the_names_stay(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    env = make(skyrl_gym_module, rows, target)
    env.step(call("kept = 'yes'"))
    out = env.step(call("def f(d):\n    return 1 / d\nf(0)"))
    text = out["observations"][0]["content"]
    assert "ZeroDivisionError: division by zero" in text and "<cell" in text
    assert (out["done"], out["reward"], out["metadata"]["infra_error"]) == (False, 0.0, False)
    assert env.step(call("kept"))["observations"][0]["content"] == "'yes'"
    env.close()


def test_a_malformed_or_unknown_call_is_shown_and_costs_the_turn(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    env = make(skyrl_gym_module, rows, target)
    broken = env.step("<tool>print(1)</tool>")["observations"][0]["content"]
    assert "No valid tool call" in broken and "<tool><python>" in broken
    unknown = env.step("<tool><search>weather</search></tool>")
    assert unknown["observations"][0]["content"] == (
        "Tool 'search' not found; the tools are: python."
    )
    assert unknown["metadata"]["turn"] == 2 and env.get_metrics()["tool_calls"] == 2.0
    assert not env.tool_groups[0].python_tool.started  # neither started a sandbox
    env.close()


def test_calls_while_thinking_and_indented_code_are_read_as_meant(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    env = make(skyrl_gym_module, rows, target)
    thought = "<think>maybe <tool><python>print('no')</python></tool></think>"
    out = env.step(thought + "\n<tool><python>\n    y = 2\n    print(y * 21)\n</python></tool>")
    assert out["observations"][0]["content"] == "42"
    env.close()


def test_the_last_turn_is_always_an_answer(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    env = make(skyrl_gym_module, rows, target, max_turns=2)
    assert env.step(call("1"))["done"] is False
    last = env.step(call("2"))  # no turn left to read an output: graded
    assert (last["done"], last["reward"], last["metadata"]["verdict"]) == (True, 0.0, "failed")
    assert "tool_name" not in last["metadata"] and env.get_metrics()["tool_calls"] == 1.0


def test_without_tools_a_tool_call_is_an_answer_as_before(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    env = skyrl_gym_module.make(
        "collimate_code", env_config=target, extras=rows.extras(rows.mbpp(1), max_turns=3)
    )
    assert env.tool_groups == []
    out = env.step(call("print(1)"))
    assert (
        out["metadata"]["verdict"] == "failed"
        and "Attempt 1 of 3" in (out["observations"][0]["content"])
    )


def test_tools_from_the_rows_collimate_mapping_and_bad_values(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    row = rows.mbpp(1, collimate={"tools": ["python"]})
    env = skyrl_gym_module.make("collimate_code", env_config=target, extras=rows.extras(row, 3))
    assert env.settings.tools == ("python",)
    with pytest.raises(ValueError, match=r"env_config\.tools: unknown tool\(s\) 'bash'"):
        make(skyrl_gym_module, rows, {**target, "tools": ["python", "bash"]})
    with pytest.raises(ValueError, match="must be a list of tool names"):
        make(skyrl_gym_module, rows, {**target, "tools": [1]})


def test_skyrl_gyms_own_multi_tool_env_drives_the_group(
    skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    """The group is a drop-in for skyrl-gym's ``PythonCodeExecutorToolGroup``:
    skyrl-gym's ``searchcode`` env parses and executes the call itself."""
    env = skyrl_gym_module.make(
        "searchcode", extras={"reward_spec": {"ground_truth": "42"}, "max_turns": 4}
    )
    group = CollimatePythonToolGroup(client=shared_client(resolve_settings(target, {})))
    env.init_tool_groups([group])
    env.step(call("total = 40"))
    out = env.step(call("print(total + 2)"))
    assert out["observations"] == [{"role": "user", "content": "42"}]
    assert out["metadata"]["tool_group"] == GROUP_NAME
    group.close()


def test_an_env_with_tools_pickles_until_its_sandbox_starts(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    env = pickle.loads(pickle.dumps(make(skyrl_gym_module, rows, target)))
    assert env.step(call("6 * 7"))["observations"][0]["content"] == "42"
    with pytest.raises(TypeError, match="does not pickle"):
        pickle.dumps(env)
    env.close()


def test_a_generator_step_with_tool_turns(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    def respond(row: int, sample: int, turn: int, history: list[dict[str, str]]) -> str:
        if turn == 1:
            return call(f"probe = {sample} + 2\nprint(probe)")
        assert history[-1]["content"] == str(sample + 2)  # its own episode's output
        return rows.RIGHT

    outs = run_step(
        [rows.mbpp(i) for i in range(2)],
        respond,
        n_samples=4,
        env_config={**target, "tools": ["python"]},
        max_turns=3,
    )
    assert [o.rewards for o in outs] == [[0.0, 1.0]] * 8
    from skyrl_gym.metrics import aggregate_for_environment

    agg = aggregate_for_environment("collimate_code", [o.metrics for o in outs])
    assert agg["mean_tool_calls"] == 1.0 and agg["pass_rate"] == 1.0


@pytest.fixture(params=["tcp", "unix"])
def stoppable(request: pytest.FixtureRequest) -> Any:
    """A backend of the test's own, to stop mid-episode."""
    with tempfile.TemporaryDirectory(prefix="crl-tool-") as tmp:
        backend = LocalCollimateBackend(socket_path=Path(tmp) / "t.sock").start()
        try:
            if request.param == "tcp":
                yield backend, {"base_url": backend.base_url}
            else:
                yield backend, {"socket": backend.socket_path}
        finally:
            backend.stop()


def test_a_backend_lost_mid_episode_is_an_infra_failure_not_a_zero(
    rows: Any, skyrl_gym_module: Any, stoppable: Any
) -> None:
    backend, cfg = stoppable
    env = make(skyrl_gym_module, rows, {**cfg, "on_infra_error": "zero"})
    assert env.step(call("x = 1"))["observations"][0]["content"] == "(no output)"
    backend.stop()
    out = env.step(call("x"))
    assert (out["done"], out["reward"], out["observations"]) == (True, 0.0, [])
    md = out["metadata"]
    assert md["verdict"] == "infra_error" and md["infra_error"] is True
    assert md["parsed_code"] == "x" and "Error" in md["error"]
    assert env.get_metrics()["infra_error"] == 1.0
    agg = type(env).aggregate_metrics([env.get_metrics()])
    assert agg["infra_errors"] == 1.0 and "pass_rate" not in agg  # left out, not scored 0.0
    assert env.tool_groups[0]._tool is None  # the episode's tool was let go


def test_by_default_a_lost_backend_raises_from_the_tool_call(
    rows: Any, skyrl_gym_module: Any, stoppable: Any
) -> None:
    backend, cfg = stoppable
    env = make(skyrl_gym_module, rows, cfg)
    env.step(call("x = 1"))
    backend.stop()
    with pytest.raises(CollimateError):
        env.step(call("x"))
    with pytest.raises(RuntimeError, match="closed"):
        env.tool_groups[0].python("x")
