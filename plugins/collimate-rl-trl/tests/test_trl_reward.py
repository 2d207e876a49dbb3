"""``CollimateReward`` called as TRL's ``GRPOTrainer`` calls reward functions
(``conftest.py``: TRL's own ``_calculate_rewards`` when its wheel is
installed), against a real local backend over TCP and a unix socket."""

from __future__ import annotations

import asyncio
import math
import pickle
from collections.abc import Callable
from typing import Any

import pytest

from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.trl import CollimateReward
from collimate_rl.trl.completions import completion_text

MBPP = {"test_list": ["assert add(1, 2) == 3", "assert add(-1, 1) == 0"]}
APPS = {"input_output": '{"inputs": ["2\\n", "5\\n"], "outputs": ["4\\n", "10\\n"]}'}

RIGHT_ADD = "Here you go:\n```python\ndef add(a, b):\n    return a + b\n```"
WRONG_ADD = "```python\ndef add(a, b):\n    return a - b\n```"
HALF_ADD = "```python\ndef add(a, b):\n    return 3 if a == 1 else 5\n```"
RIGHT_DOUBLE = "```python\nprint(int(input()) * 2)\n```"
WRONG_DOUBLE = "```python\nprint(int(input()) * 3)\n```"


def _rows(prompt: Any, truth: Any, completions: list[Any], **extra: Any) -> list[dict[str, Any]]:
    """What TRL hands ``_calculate_rewards``: one input per completion, the
    prompt's row repeated for each of its ``num_generations``."""
    return [{"prompt": prompt, "ground_truth": truth, **extra} for _ in completions]


def length_penalty(completions: list[Any], **kwargs: Any) -> list[float]:
    """A plain synchronous reward function, as users add beside ours."""
    return [-len(completion_text(c, i)) / 1000 for i, c in enumerate(completions)]


async def always_half(prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float]:
    """Another async reward function: TRL gathers it with ours."""
    await asyncio.sleep(0.01)
    return [0.5] * len(completions)


def test_the_call_is_trls_own_code(trl_code: dict[str, Any]) -> None:
    assert trl_code["origin"] == "wheel"


def test_trl_sees_an_async_function_named_by_its_name(
    make_trainer: Callable[[list[Any]], Any],
) -> None:
    reward = CollimateReward("ground_truth", name="code_tests")
    trainer = make_trainer([reward])
    assert trainer.reward_func_names == ["code_tests"]
    assert trainer._trl["is_async_callable"](reward)
    assert trainer.async_loop is not None


def test_plain_completions_several_functions_gathered(
    make_trainer: Callable[[list[Any]], Any], target: dict[str, str]
) -> None:
    reward = CollimateReward("ground_truth", **target)
    trainer = make_trainer([reward, length_penalty, always_half])
    p1, p2 = "Write add(a, b).", "Read n, print 2n."
    c1 = [RIGHT_ADD, WRONG_ADD, HALF_ADD]
    c2 = [RIGHT_DOUBLE, WRONG_DOUBLE, "no code at all"]
    inputs = _rows(p1, MBPP, c1, task_id=1) + _rows(p2, APPS, c2, task_id=2)
    prompts = [p1] * 3 + [p2] * 3
    rows = trainer.calculate_rewards(inputs, prompts, c1 + c2)
    assert [r[0] for r in rows] == [1.0, 0.0, 0.5, 1.0, 0.0, 0.0]
    assert [r[1] for r in rows] == length_penalty(c1 + c2)
    assert [r[2] for r in rows] == [0.5] * 6
    assert trainer.metrics["collimate/infra_error_fraction"] == [0.0]


def test_conversational_completions(
    make_trainer: Callable[[list[Any]], Any], target: dict[str, str]
) -> None:
    trainer = make_trainer([CollimateReward("ground_truth", **target)])
    prompt = [{"role": "user", "content": "Write add(a, b)."}]
    completions = [
        [{"role": "assistant", "content": RIGHT_ADD}],
        [{"role": "assistant", "content": WRONG_ADD}],
        # after a tool call: the last assistant message is the answer
        [
            {"role": "assistant", "content": "let me check", "tool_calls": []},
            {"role": "tool", "name": "python", "content": "3"},
            {"role": "assistant", "content": [{"type": "text", "text": RIGHT_ADD}]},
        ],
    ]
    rows = trainer.calculate_rewards(_rows(prompt, MBPP, completions), [prompt] * 3, completions)
    assert [r[0] for r in rows] == [1.0, 0.0, 1.0]


def test_infra_failure_is_none_then_nan_in_trl(
    make_trainer: Callable[[list[Any]], Any], tmp_path: Any
) -> None:
    """The backend is really stopped: every grade fails for the
    infrastructure, and TRL gets None (NaN in its matrix), not 0.0."""
    sock = tmp_path / "gone.sock"
    with LocalCollimateBackend(socket_path=sock, port=None):
        pass  # started, then stopped: nothing listens on the socket any more
    reward = CollimateReward("ground_truth", unix_socket=str(sock))
    trainer = make_trainer([reward, always_half])
    completions = [RIGHT_ADD, WRONG_ADD]
    rows = trainer.calculate_rewards(_rows("p", MBPP, completions), ["p", "p"], completions)
    assert all(math.isnan(r[0]) for r in rows)
    assert [r[1] for r in rows] == [0.5, 0.5]
    assert trainer.metrics["collimate/infra_error_fraction"] == [1.0]


def test_crn_one_seed_per_prompt_group() -> None:
    reward = CollimateReward()
    prompts = ["a", "a", "b", "b"]
    seeds = reward._seeds(prompts, 4)
    assert seeds[0] == seeds[1] != seeds[2] == seeds[3]
    assert CollimateReward(seed_mode="vanilla")._seeds(prompts, 4) == [None] * 4


def test_seeds_reach_the_backend(target: dict[str, str]) -> None:
    """A randomised check: the whole group meets the same draw."""
    truth = {
        "kind": "property",
        "reference": "    return x * 2",
        "generator": "random.randint(0, 10**9)",
        "k": 4,
    }
    reward = CollimateReward(**target)
    completions = ["```python\ndef solve(x):\n    return x * 2\n```"] * 2
    rewards = asyncio.run(
        reward(prompts=["p", "p"], completions=completions, ground_truth=[truth, truth])
    )
    assert rewards == [1.0, 1.0]


def test_missing_column_names_the_columns() -> None:
    reward = CollimateReward("tests")
    with pytest.raises(KeyError, match=r"no column 'tests'.*ground_truth"):
        asyncio.run(reward(prompts=["p"], completions=["x"], ground_truth=[MBPP], trainer_state=1))


def test_bad_ground_truth_is_a_data_error_naming_the_row(target: dict[str, str]) -> None:
    reward = CollimateReward(**target)
    with pytest.raises(ValueError, match=r"row at batch position 1 .*, column 'ground_truth'"):
        asyncio.run(
            reward(prompts=["p", "p"], completions=["x", "y"], ground_truth=[MBPP, {"nope": 1}])
        )


def test_entry_column(target: dict[str, str]) -> None:
    truth = {"input_output": '{"fn_name": "twice", "inputs": [[2]], "outputs": [4]}'}
    reward = CollimateReward(entry_column="fn", **target)
    code = "```python\ndef helper():\n    pass\n\ndef twice(x):\n    return 2 * x\n```"
    assert asyncio.run(
        reward(prompts=["p"], completions=[code], ground_truth=[truth], fn=["twice"])
    ) == [1.0]


def test_picklable_for_trainers_that_copy_their_reward_functions() -> None:
    reward = pickle.loads(pickle.dumps(CollimateReward("gt", name="x")))
    assert (reward.column, reward.__name__) == ("gt", "x")


@pytest.mark.parametrize(
    ("completion", "text"),
    [
        ("plain", "plain"),
        ([{"role": "assistant", "content": "a"}], "a"),
        ({"role": "assistant", "content": [{"type": "text", "text": "b"}]}, "b"),
        ([], ""),
    ],
)
def test_completion_text(completion: Any, text: str) -> None:
    assert completion_text(completion, 0) == text


def test_completion_text_rejects_what_is_not_a_completion() -> None:
    with pytest.raises(TypeError, match="completion 3"):
        completion_text(42, 3)
    with pytest.raises(TypeError, match="without an assistant message"):
        completion_text([{"role": "user", "content": "hi"}], 0)
