"""Common random numbers: every rollout of one prompt grades with one seed,
other prompts with others, and the backend confirms the seed it used."""

from __future__ import annotations

from typing import Any

import pytest

from collimate_rl import DET_SEED, seed_from_key
from collimate_rl.skyrl.rows import group_key, seed_for
from collimate_rl.skyrl.settings import resolve_settings

# A property test whose cases come from the seed: the same seed, the same cases.
PROPERTY_ROW = {
    "reward_spec": {
        "ground_truth": {
            "kind": "property",
            "reference": "    return sorted(x)",
            "generator": "[random.randint(0, 9) for _ in range(5)]",
            "k": 6,
        }
    }
}


def seeds_of(skyrl_gym: Any, env_config: Any, rows: list[dict[str, Any]], n: int) -> list[str]:
    out = []
    for extras in rows:
        for _ in range(n):
            env = skyrl_gym.make("collimate_code", env_config=env_config, extras=dict(extras))
            step = env.step(RIGHT_SORT)
            assert step["metadata"]["seed_ack"] == "verified"
            out.append(step["metadata"]["seed"])
            env.close()
    return out


RIGHT_SORT = "```python\ndef solve(x):\n    return sorted(x)\n```"


def test_crn_eight_rollouts_share_one_seed_two_prompts_two(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    prompts = [rows.extras(rows.mbpp(1)), rows.extras(rows.mbpp(2))]
    seeds = []
    for extras in prompts:
        for _ in range(8):
            env = skyrl_gym_module.make(
                "collimate_code", env_config={**target, "seed_mode": "crn"}, extras=dict(extras)
            )
            md = env.step(rows.RIGHT)["metadata"]
            assert md["seed_ack"] == "verified" and md["crn_group"] == "extra_info.index"
            seeds.append(md["seed"])
    assert len(set(seeds[:8])) == 1 and len(set(seeds[8:])) == 1
    assert seeds[0] != seeds[8]


def test_crn_is_the_default_and_is_reproducible(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    extras = rows.extras(rows.mbpp(5))
    first = seeds_of(skyrl_gym_module, target, [{**PROPERTY_ROW, **extras}], 1)
    again = seeds_of(skyrl_gym_module, target, [{**PROPERTY_ROW, **extras}], 1)
    assert first == again  # a rerun meets the same cases
    key = group_key(extras)[1]
    assert first[0] == seed_from_key(key)


def test_vanilla_draws_a_fresh_seed_per_rollout(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    extras = {**rows.extras(rows.mbpp(1)), "collimate": {"seed_mode": "vanilla"}}
    seeds = seeds_of(skyrl_gym_module, target, [{**extras, **PROPERTY_ROW}], 4)
    assert len(set(seeds)) == 4


def test_deterministic_uses_one_seed_everywhere(
    rows: Any, skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    prompts = [rows.extras(rows.mbpp(1)), rows.extras(rows.mbpp(2))]
    cfg = {**target, "seed_mode": "deterministic"}
    assert set(seeds_of(skyrl_gym_module, cfg, prompts, 2)) == {DET_SEED}


def test_base_seed_salts_crn_seeds(rows: Any) -> None:
    extras = rows.extras(rows.mbpp(1))
    plain = seed_for(resolve_settings({}, {}), extras)[0]
    salted = seed_for(resolve_settings({"base_seed": "epoch-2"}, {}), extras)[0]
    assert plain != salted and salted == seed_from_key(group_key(extras)[1], "epoch-2")


@pytest.mark.parametrize(
    ("extras", "where"),
    [
        ({"crn_seed": "AB" * 32, "uid": "u"}, "crn_seed"),
        ({"extra_info": {"crn_seed": "ab" * 32}, "uid": "u"}, "extra_info.crn_seed"),
        ({"crn_key": "k", "uid": "u", "extra_info": {"index": 1}}, "crn_key"),
        ({"extra_info": {"crn_key": "k"}, "uid": "u"}, "extra_info.crn_key"),
        ({"uid": "u", "extra_info": {"index": 1}}, "uid"),
        ({"extra_info": {"uid": 7, "index": 1}}, "extra_info.uid"),
        ({"index": 3}, "index"),
        ({"extra_info": {"index": 3}}, "extra_info.index"),
        ({}, "reward_spec"),
    ],
)
def test_the_group_key_is_the_first_field_found(extras: dict[str, Any], where: str) -> None:
    row = {"reward_spec": {"ground_truth": {"test_list": ["assert True"]}}, **extras}
    found, key, is_seed = group_key(row)
    assert found == where
    if where.endswith("crn_seed"):
        assert is_seed and key == "ab" * 32  # used as the seed itself, lower-cased


def test_an_index_is_keyed_with_its_dataset_and_split() -> None:
    def key(source: str, split: str) -> str:
        return group_key({"data_source": source, "extra_info": {"index": 0, "split": split}})[1]

    assert len({key("mbpp", "train"), key("apps", "train"), key("mbpp", "test")}) == 3


def test_without_a_key_rollouts_of_one_ground_truth_share_a_seed() -> None:
    settings = resolve_settings({}, {})
    a = {"reward_spec": {"ground_truth": {"test_list": ["assert f() == 1"]}}}
    b = {"reward_spec": {"ground_truth": {"test_list": ["assert f() == 2"]}}}
    assert seed_for(settings, dict(a)) == seed_for(settings, dict(a))
    assert seed_for(settings, a)[0] != seed_for(settings, b)[0]
