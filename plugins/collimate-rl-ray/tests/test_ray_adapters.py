"""The framework adapters inside Ray, with no URL set anywhere: SkyRL's
``skyrl_gym.make("collimate_code", env_config={})`` in a Ray task, slime's
reward function and verl's ``compute_score`` in Ray actors. Each reaches
the cluster's graders through ``connect()``'s cluster step (the graders'
own counters grow), and each grades right and wrong alike."""

from __future__ import annotations

import asyncio
import os
from types import SimpleNamespace
from typing import Any

import pytest
import ray

from collimate_rl.ray.testing import TARGET_ENV, RayCluster, grader_counters, pin

ADD_TESTS = ["assert add(1, 2) == 3", "assert add(0, 0) == 0"]
RIGHT = "Here it is:\n```python\ndef add(a, b):\n    return a + b\n```"
WRONG = "Here it is:\n```python\ndef add(a, b):\n    return a + b + 1\n```"


def _unset() -> list[str]:
    """The target variables set in this worker (must be none)."""
    return [name for name in TARGET_ENV if os.environ.get(name)]


@ray.remote(num_cpus=0)
def _skyrl_episode(response: str) -> tuple[float, list[str]]:
    import skyrl_gym

    extras = {
        "data_source": "mbpp",
        "reward_spec": {"method": "rule", "ground_truth": {"test_list": ADD_TESTS}},
        "extra_info": {"split": "train", "index": 17},
        "max_turns": 1,
    }
    env = skyrl_gym.make("collimate_code", env_config={}, extras=extras)
    env.init([{"role": "user", "content": "Write add(a, b) that returns a + b."}])
    out = env.step(response)
    return float(out["reward"]), _unset()


@ray.remote(num_cpus=0)
class _SlimeRewardWorker:
    def score(self, response: str) -> tuple[Any, list[str]]:
        from collimate_rl.slime import reward_func

        args = SimpleNamespace(reward_key="score")
        sample = SimpleNamespace(
            prompt="Write add(a, b) that returns a + b.",
            response=response,
            label={"test_list": ADD_TESTS},
            metadata={"task_id": "add-1"},
            index=0,
            group_index=0,
        )
        return asyncio.run(reward_func(args, sample))["score"], _unset()


@ray.remote(num_cpus=0)
class _VerlRewardWorker:
    def score(self, response: str) -> tuple[Any, list[str]]:
        from collimate_rl.verl import compute_score

        truth = {"test_list": ADD_TESTS}
        info = {"split": "test", "index": 3}
        return compute_score("mbpp", response, truth, info)["score"], _unset()


def _graded(before: dict[str, int]) -> int:
    after = grader_counters()
    return sum(after[n] - before.get(n, 0) for n in after)


def test_skyrl_env_in_a_ray_task_finds_the_graders(ray_cluster: RayCluster) -> None:
    node_id = ray_cluster.node_ids[1]
    before = grader_counters()
    right = _skyrl_episode.options(scheduling_strategy=pin(node_id)).remote(RIGHT)
    wrong = _skyrl_episode.options(scheduling_strategy=pin(node_id)).remote(WRONG)
    (r_right, set_right), (r_wrong, set_wrong) = ray.get([right, wrong])
    assert (r_right, r_wrong) == (1.0, 0.0)
    assert set_right == set_wrong == []
    assert grader_counters()[node_id] > before[node_id]  # its own node's grader


@pytest.mark.parametrize("worker", [_SlimeRewardWorker, _VerlRewardWorker], ids=["slime", "verl"])
def test_reward_functions_in_ray_actors_find_the_graders(
    ray_cluster: RayCluster, worker: Any
) -> None:
    before = grader_counters()
    actor = worker.options(scheduling_strategy=pin(ray_cluster.node_ids[2])).remote()
    (right, set_right), (wrong, set_wrong) = ray.get(
        [actor.score.remote(RIGHT), actor.score.remote(WRONG)]
    )
    ray.kill(actor)
    assert (right, wrong) == (1.0, 0.0)
    assert set_right == set_wrong == []
    assert _graded(before) >= 1
