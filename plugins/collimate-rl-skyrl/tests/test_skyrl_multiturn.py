"""Multi-turn episodes: a failed attempt gets the grader's feedback and
another turn; the last graded turn's reward is the episode's."""

from __future__ import annotations

from typing import Any

from collimate_rl.skyrl.harness import run_step


def test_a_wrong_first_attempt_gets_feedback_a_fixed_second_gets_one(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    env = skyrl_gym_module.make(
        "collimate_code", env_config=target, extras=rows.extras(rows.mbpp(3), max_turns=3)
    )
    first = env.step(rows.WRONG)
    assert first["done"] is False and first["reward"] == 0.0
    assert first["metadata"]["turn_reward"] == 0.5 and first["metadata"]["verdict"] == "failed"
    (message,) = first["observations"]
    assert message["role"] == "user"
    assert "Attempt 1 of 3 did not pass." in message["content"]
    assert "1 of 2 tests passed." in message["content"]
    assert "- test 1: wrong answer" in message["content"]
    second = env.step(rows.RIGHT)
    assert (second["done"], second["reward"], second["observations"]) == (True, 1.0, [])
    assert second["metadata"]["turn"] == 2
    assert env.get_metrics()["turns"] == 2.0 and env.get_metrics()["passed"] == 1.0
    env.close()


def test_the_last_turn_ends_the_episode_with_its_own_reward(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    env = skyrl_gym_module.make(
        "collimate_code", env_config=target, extras=rows.extras(rows.mbpp(3), max_turns=2)
    )
    assert env.step(rows.WRONG)["done"] is False
    last = env.step(rows.WRONG)
    assert (last["done"], last["reward"], last["observations"]) == (True, 0.5, [])


def test_feedback_names_a_load_error_and_missing_code(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    env = skyrl_gym_module.make(
        "collimate_code", env_config=target, extras=rows.extras(rows.mbpp(1), max_turns=3)
    )
    syntax = env.step("```python\ndef add(a, b)\n    return a + b\n```")["observations"][0][
        "content"
    ]
    assert "Your code failed to load" in syntax and "SyntaxError" in syntax
    empty = env.step("")["observations"][0]["content"]
    assert "No code was found in your answer" in empty


def test_feedback_never_carries_the_tests(skyrl_gym_module: Any, target: dict[str, Any]) -> None:
    secret = "assert add(40, 2) == 42  # SECRET-TEST-MARK"
    extras = {
        "reward_spec": {"ground_truth": {"test_list": [secret]}, "entry": "add"},
        "max_turns": 2,
    }
    env = skyrl_gym_module.make("collimate_code", env_config=target, extras=extras)
    out = env.step("```python\ndef add(a, b):\n    return 0\n```")
    assert "SECRET-TEST-MARK" not in out["observations"][0]["content"]
    assert "40, 2" not in out["observations"][0]["content"]


def test_config_max_turns_wins_over_the_generators(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    extras = rows.extras(rows.mbpp(1), max_turns=5)
    env = skyrl_gym_module.make(
        "collimate_code", env_config={**target, "max_turns": 1}, extras=extras
    )
    assert env.step(rows.WRONG)["done"] is True


def test_a_multi_turn_step_through_the_generator_harness(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    def respond(row: int, sample: int, turn: int, history: list[dict[str, str]]) -> str:
        # odd samples are wrong first and fix their code once they read the feedback
        if sample % 2 and turn == 1:
            return rows.WRONG
        assert turn == 1 or "did not pass" in history[-1]["content"]
        return rows.RIGHT

    outs = run_step(
        [rows.mbpp(i) for i in range(2)], respond, n_samples=4, env_config=target, max_turns=2
    )
    assert [o.rewards for o in outs] == [[1.0], [0.0, 1.0]] * 4
    assert all(o.reward == 1.0 for o in outs)


def test_reuse_session_grades_every_turn_in_one_session_deleted_on_close(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    from collimate_rl.skyrl.clients import shared_client

    cfg = {**target, "reuse_session": True}
    env = skyrl_gym_module.make(
        "collimate_code", env_config=cfg, extras=rows.extras(rows.mbpp(2), 3)
    )
    client = shared_client(env.settings)
    before = {s["session_id"] for s in client.list_sessions()}
    first = env.step(rows.WRONG)
    during = {s["session_id"] for s in client.list_sessions()} - before
    second = env.step(rows.RIGHT)
    assert len(during) == 1 and env._session_id in during
    assert (first["metadata"]["turn_reward"], second["reward"]) == (0.5, 1.0)
    assert first["metadata"]["packed"] is False  # a session's grades are its own execs
    (sid,) = during
    env.close()
    assert sid not in {s["session_id"] for s in client.list_sessions()}
