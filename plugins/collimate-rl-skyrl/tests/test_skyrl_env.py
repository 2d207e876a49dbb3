"""CollimateCodeEnv made through the real ``skyrl_gym.make`` and graded on the
real local backend, over TCP and the unix socket: rewards, the step output,
code extraction, configuration and bad rows."""

from __future__ import annotations

import json
import types
from typing import Any

import pytest
from omegaconf import OmegaConf

from collimate_rl.skyrl import CollimateCodeEnv
from collimate_rl.skyrl.clients import shared_client
from collimate_rl.skyrl.settings import DEFAULT_TEMPLATE, resolve_settings


def make(skyrl_gym: Any, env_config: Any, extras: dict[str, Any]) -> Any:
    return skyrl_gym.make("collimate_code", env_config=env_config, extras=extras)


def test_make_returns_a_base_text_env(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    from skyrl_gym.envs.base_text_env import BaseTextEnv

    env = make(skyrl_gym_module, target, rows.extras(rows.mbpp(1)))
    assert isinstance(env, CollimateCodeEnv) and isinstance(env, BaseTextEnv)
    prompt = [{"role": "user", "content": "hi"}]
    assert env.init(prompt)[0] == prompt


def test_right_code_gets_one_with_the_full_step_output(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    env = make(skyrl_gym_module, target, rows.extras(rows.mbpp(3)))
    out = env.step(rows.RIGHT)
    assert set(out) == {"observations", "reward", "done", "metadata", "postprocessed_action"}
    assert (out["reward"], out["done"], out["observations"]) == (1.0, True, [])
    md = out["metadata"]
    assert md["parsed_code"] == "def add(a, b):\n    return a + b"
    assert md["verdict"] == "passed" and md["infra_error"] is False and md["exit_code"] == 0
    assert md["seed_ack"] == "verified" and len(md["seed"]) == 64
    assert md["detail"]["passed"] == md["detail"]["total"] == 2
    assert md["data_source"] == "mbpp"
    env.close()


def test_wrong_code_gets_its_partial_reward_and_per_test_detail(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    env = make(skyrl_gym_module, target, rows.extras(rows.mbpp(3)))
    out = env.step(rows.WRONG)
    assert (out["reward"], out["done"]) == (0.5, True)  # add(0, 0) == 0 still holds
    assert out["metadata"]["verdict"] == "failed"
    assert out["metadata"]["detail"]["failed_indices"] == [0]


def test_code_comes_from_the_last_block_defining_the_entry_not_from_reasoning(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    completion = (
        "<think>```python\ndef add(a, b):\n    return a + b\n```</think>\n"
        "Draft:\n```python\ndef add(a, b):\n    return 0\n```\n"
        "Final:\n```python\ndef add(a, b):\n    return b + a\n```\n"
        "```python\nprint('a usage example')\n```"
    )
    out = make(skyrl_gym_module, target, rows.extras(rows.mbpp(2))).step(completion)
    assert out["metadata"]["parsed_code"] == "def add(a, b):\n    return b + a"
    assert out["reward"] == 1.0


def test_no_code_is_a_task_failure_not_an_error(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    out = make(skyrl_gym_module, target, rows.extras(rows.mbpp(2))).step("")
    assert (out["reward"], out["metadata"]["verdict"], out["metadata"]["infra_error"]) == (
        0.0,
        "failed",
        False,
    )


@pytest.mark.parametrize(
    ("ground_truth", "entry", "right"),
    [
        (  # HumanEval
            {
                "test": "def check(candidate):\n    assert candidate(2) == 4\n",
                "entry_point": "double",
            },
            "double",
            "def double(x):\n    return 2 * x\n",
        ),
        (  # KodCode (pytest)
            {"test": "from solution import double\n\ndef test_d():\n    assert double(3) == 6\n"},
            "double",
            "def double(x):\n    return 2 * x\n",
        ),
        (  # APPS / TACO, as a JSON string the way the dataset stores it
            json.dumps(
                {
                    "input_output": json.dumps(
                        {"fn_name": "double", "inputs": [[1]], "outputs": [[2]]}
                    )
                }
            ),
            "solve",
            "def double(x):\n    return 2 * x\n",
        ),
        (  # LiveCodeBench stdin
            [{"input": "2\n", "output": "4", "testtype": "stdin"}],
            None,
            "print(2 * int(input()))\n",
        ),
        (  # open-r1 verification_info
            {
                "language": "python",
                "test_cases": [{"input": "5\n", "output": "10\n", "type": "stdin_stdout"}],
            },
            None,
            "print(2 * int(input()))\n",
        ),
    ],
    ids=["humaneval", "kodcode", "apps-json", "lcb-stdin", "open-r1"],
)
def test_any_registered_dataset_shape_grades(
    skyrl_gym_module: Any, target: dict[str, Any], ground_truth: Any, entry: str | None, right: str
) -> None:
    reward_spec: dict[str, Any] = {"ground_truth": ground_truth}
    if entry:
        reward_spec["entry"] = entry
    extras = {"reward_spec": reward_spec, "max_turns": 1}
    good = make(skyrl_gym_module, target, extras).step(f"```python\n{right}```")
    bad = make(skyrl_gym_module, target, extras).step("```python\nprint('nope')\n```")
    assert (good["reward"], bad["reward"]) == (1.0, 0.0)


def test_an_empty_env_config_reads_the_target_from_the_environment(
    rows: Any, skyrl_gym_module: Any, target_in_environment: dict[str, Any]
) -> None:
    env = make(skyrl_gym_module, {}, rows.extras(rows.mbpp(4)))
    assert env.settings.base_url is None and env.settings.socket is None
    assert env.step(rows.RIGHT)["reward"] == 1.0
    client = shared_client(env.settings)
    where = target_in_environment.get("socket") or target_in_environment["base_url"]
    assert where in client.endpoint  # type: ignore[attr-defined]


def test_extras_collimate_names_the_target_when_env_config_is_empty(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLLIMATE_SERVE_URL", "http://127.0.0.1:9")  # would refuse
    monkeypatch.delenv("COLLIMATE_SERVE_SOCKET", raising=False)
    env = make(skyrl_gym_module, {}, rows.extras(rows.mbpp(4, collimate=dict(target))))
    assert env.step(rows.RIGHT)["reward"] == 1.0


def test_env_config_wins_over_extras_which_win_over_defaults() -> None:
    extras = {"collimate": {"template_id": "from-extras", "timeout_seconds": 7, "max_turns": 2}}
    s = resolve_settings({"template_id": "from-config"}, extras)
    assert (s.template_id, s.timeout_seconds, s.max_turns) == ("from-config", 7, 2)
    assert resolve_settings({}, {}).template_id == DEFAULT_TEMPLATE
    assert resolve_settings(None, {}).seed_mode == "crn"


def test_env_config_may_be_a_dictconfig_or_an_attribute_object() -> None:
    values = {"template_id": "py", "seed_mode": "vanilla", "reuse_session": True}
    for config in (OmegaConf.create(values), types.SimpleNamespace(**values)):
        s = resolve_settings(config, {})
        assert (s.template_id, s.seed_mode, s.reuse_session) == ("py", "vanilla", True)


@pytest.mark.parametrize(
    ("env_config", "extras", "message"),
    [
        ({"templat_id": "py"}, {}, "env_config: unknown key(s) 'templat_id'"),
        ({}, {"collimate": {"seed": 1}}, "extras[\"collimate\"]: unknown key(s) 'seed'"),
        ({"seed_mode": "fixed"}, {}, "env_config.seed_mode must be one of vanilla, crn"),
        ({"on_infra_error": "skip"}, {}, "env_config.on_infra_error must be one of raise, zero"),
        ({"timeout_seconds": 0}, {}, "env_config.timeout_seconds must be a positive integer"),
        ({"reuse_session": "yes"}, {}, "env_config.reuse_session must be true or false"),
        ({"seed_mode": "deterministic", "base_seed": "x"}, {}, "base_seed must be 64 hex"),
        (["a"], {}, "env_config must be a dict"),
    ],
)
def test_bad_settings_name_the_key(env_config: Any, extras: Any, message: str) -> None:
    with pytest.raises(ValueError) as info:
        resolve_settings(env_config, extras)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("extras", "message"),
    [
        ({}, "extras has no reward_spec.ground_truth"),
        ({"reward_spec": {"method": "rule"}}, "extras has no reward_spec.ground_truth"),
        ({"reward_spec": {"ground_truth": {"nothing": 1}}}, "extras reward_spec.ground_truth:"),
        ({"reward_spec": {"ground_truth": {"test_list": ["assert 1"]}, "entry": 3}}, "entry"),
        ({"reward_spec": {"ground_truth": {"test_list": ["x"]}}, "max_turns": 0}, "max_turns"),
        ({"reward_spec": {"ground_truth": {"test_list": ["x"]}}, "crn_seed": "abc"}, "crn_seed"),
    ],
)
def test_a_row_that_cannot_be_graded_fails_at_make_naming_the_field(
    skyrl_gym_module: Any, extras: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError) as info:
        make(skyrl_gym_module, {}, extras)
    assert message in str(info.value)


def test_settings_never_show_the_api_key() -> None:
    s = resolve_settings({"api_key": "col_secret_123"}, {})
    assert "col_secret_123" not in repr(s) and "***" in repr(s)


def test_a_fleet_of_nodes_is_one_target(rows: Any, skyrl_gym_module: Any) -> None:
    """``base_url`` may list several daemons (comma-separated): the step's
    grades spread over them (a ``MultiNodeClient``), each reward its own."""
    from concurrent.futures import ThreadPoolExecutor

    from collimate_rl.local_backend import LocalCollimateBackend

    nodes = [LocalCollimateBackend(run_slots=1).start() for _ in range(2)]
    try:
        config = {"base_url": ",".join(n.base_url for n in nodes)}

        def rollout(i: int) -> float:
            env = make(skyrl_gym_module, config, rows.extras(rows.mbpp(i)))
            try:
                return float(env.step(rows.RIGHT if i % 2 else rows.WRONG)["reward"])
            finally:
                env.close()

        with ThreadPoolExecutor(16) as pool:
            rewards = list(pool.map(rollout, range(32)))
        assert rewards == [1.0 if i % 2 else 0.5 for i in range(32)]  # (WRONG passes one test)
        ran = [node.health()["execs_run"] for node in nodes]
        assert all(n > 0 for n in ran), ran
    finally:
        for node in nodes:
            node.stop()
