"""Reading a slime ``Sample`` (spec, code, seed), marking an infra failure,
and the dynamic-sampling filter: no backend needed."""

from __future__ import annotations

import json
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from collimate_rl import (
    AssertReward,
    CallReward,
    GradeResult,
    PropertyReward,
    PytestReward,
    StdinStdoutReward,
    UnitTestReward,
    seed_from_key,
)
from collimate_rl.seeds import DET_SEED
from collimate_rl.slime import INFRA_MARK, FilterVerdict, SlimeConfig, drop_infra_groups
from collimate_rl.slime.outcome import as_reward, infra_reward, is_infra_marked, mark_infra
from collimate_rl.slime.samples import code_of, crn_key, seed_of, spec_of

CRN = SlimeConfig()


@pytest.mark.parametrize(
    ("label", "kind", "entry"),
    [
        ([{"input": [1], "output": 2}], UnitTestReward, "solve"),
        ({"test_list": ["assert add(1, 2) == 3"], "test_setup_code": ""}, AssertReward, "solve"),
        ({"test_cases": ["assert f(1) == 1"]}, AssertReward, "solve"),
        (
            {
                "test": "def check(candidate):\n    assert candidate(2) == 4\n",
                "entry_point": "double",
            },
            AssertReward,
            "double",
        ),
        (
            {"test": "from solution import f\n\ndef test_f():\n    assert f(1) == 2\n"},
            PytestReward,
            "solve",
        ),
        (
            {
                "input_output": json.dumps(
                    {"fn_name": "twoSum", "inputs": [[[2, 7], 9]], "outputs": [[[0, 1]]]}
                )
            },
            CallReward,
            "twoSum",
        ),
        ([{"input": "2\n", "output": "4", "testtype": "stdin"}], StdinStdoutReward, "solve"),
        (
            {
                "language": "python",
                "test_cases": [{"input": "2\n", "output": "4\n", "type": "stdin_stdout"}],
            },
            StdinStdoutReward,
            "solve",
        ),
        (
            {"reference": "    return x", "generator": "random.randint(0, 9)", "k": 4},
            PropertyReward,
            "solve",
        ),
    ],
)
def test_every_dataset_shape_as_object_or_json_string(
    slime: SimpleNamespace, label: Any, kind: type, entry: str
) -> None:
    for given in (label, json.dumps(label)):
        spec = spec_of(slime.Sample(label=given), CRN)
        assert isinstance(spec, kind) and spec.entry == entry


def test_a_group_shares_one_spec(slime: SimpleNamespace) -> None:
    label = json.dumps([{"input": [1], "output": 2}])
    assert spec_of(slime.Sample(label=label), CRN) is spec_of(slime.Sample(label=label), CRN)


def test_missing_or_bad_labels_name_the_sample(slime: SimpleNamespace) -> None:
    with pytest.raises(ValueError, match=r"sample \(index=3, group_index=1\) has no label"):
        spec_of(slime.Sample(index=3, group_index=1), CRN)
    with pytest.raises(ValueError, match=r"sample \(index=4\): sample.label is not a ground truth"):
        spec_of(slime.Sample(index=4, label="the answer is 42"), CRN)
    with pytest.raises(ValueError, match="unknown reward kind 'nope'"):
        spec_of(slime.Sample(label={"kind": "nope"}), CRN)


def test_code_is_the_entrys_last_block_and_nothing_else(slime: SimpleNamespace) -> None:
    response = (
        "<think>```python\ndef solve(x):\n    return 'from the reasoning'\n```</think>\n"
        "First try:\n```python\ndef solve(x):\n    return 1\n```\n"
        "Better:\n```python\ndef solve(x):\n    return 2 * x\n```\nDone."
    )
    sample = slime.Sample(label=[{"input": [1], "output": 2}], response=response)
    assert code_of(sample, spec_of(sample, CRN), CRN) == "def solve(x):\n    return 2 * x"
    # The entry comes from the ground truth (APPS fn_name) before the setting.
    apps = slime.Sample(
        label={"fn_name": "twoSum", "inputs": [[1]], "outputs": [[1]]},
        response=(
            "```python\ndef helper():\n    pass\n```\n```python\ndef twoSum(x):\n    return x\n```"
        ),
    )
    assert code_of(apps, spec_of(apps, CRN), CRN) == "def twoSum(x):\n    return x"


def test_a_response_must_be_text(slime: SimpleNamespace) -> None:
    sample = slime.Sample(index=9, label=[{"input": [1], "output": 2}], response=["x"])
    with pytest.raises(TypeError, match=r"sample \(index=9\): sample.response must be a string"):
        code_of(sample, spec_of(sample, CRN), CRN)


def test_crn_keys_in_order(slime: SimpleNamespace) -> None:
    S = slime.Sample
    assert crn_key(S(prompt="p", group_index=4, metadata={"crn_key": "k", "uid": "u"})) == "k"
    assert crn_key(S(prompt="p", group_index=4, metadata={"uid": "u"})) == "u"
    assert crn_key(S(prompt="p", group_index=4, metadata={"uid": 17})) == "17"
    assert crn_key(S(prompt="p", group_index=4)) == "group_index:4"
    assert crn_key(S(prompt="p")) == "p"
    chat = [{"role": "user", "content": "hi"}]
    assert crn_key(S(prompt=chat)) == json.dumps(chat, sort_keys=True, separators=(",", ":"))


def test_a_group_shares_one_seed_and_groups_differ(slime: SimpleNamespace, groups: Any) -> None:
    two = groups(2, 8)
    seeds = [{seed_of(s, CRN) for s in group} for group in two]
    assert all(len(s) == 1 for s in seeds) and seeds[0] != seeds[1]
    assert seeds[0] == {seed_from_key("group_index:0")}


def test_seed_modes(slime: SimpleNamespace) -> None:
    sample = slime.Sample(prompt="p", metadata={"crn_seed": "AB" * 32})
    assert seed_of(sample, CRN) == "ab" * 32
    assert seed_of(sample, SlimeConfig(seed_mode="vanilla")) is None
    assert seed_of(sample, SlimeConfig(seed_mode="deterministic")) == DET_SEED
    base = "cd" * 32
    assert seed_of(sample, SlimeConfig(seed_mode="deterministic", base_seed=base)) == base
    plain = slime.Sample(prompt="p")
    assert seed_of(plain, SlimeConfig(base_seed=base)) == seed_from_key("p", base)
    assert seed_of(plain, SlimeConfig(base_seed=base)) != seed_of(plain, CRN)
    with pytest.raises(ValueError, match=r"metadata\['crn_seed'\] must be 64 hex"):
        seed_of(slime.Sample(metadata={"crn_seed": "x"}), CRN)


def test_rewards_as_float_or_dict() -> None:
    result = GradeResult(reward=0.5, seed="ab" * 32, detail={"passed": 1, "total": 2})
    assert as_reward(result, False) == 0.5
    assert as_reward(result, True) == {
        "score": 0.5,
        "passed": 1,
        "total": 2,
        "verdict": "failed",
        "seed": "ab" * 32,
        "reason": "failed 0.5; 1/2 tests passed",  # GradeResult.explain()
    }
    assert as_reward(GradeResult(reward=1.0), True)["passed"] is None
    assert as_reward(result, True, "given")["reason"] == "given"
    assert infra_reward(None, False) == 0.0
    placeholder = infra_reward("ab" * 32, True, "ConnectError: refused")
    assert placeholder["verdict"] == "infra_error"
    assert placeholder["reason"] == "infra_error: ConnectError: refused"


def test_marking_an_infra_failure(slime: SimpleNamespace) -> None:
    sample = slime.Sample(status=slime.Sample.Status.COMPLETED)
    mark_infra(sample, ConnectionError("refused"))
    assert sample.remove_sample is True
    assert sample.status is slime.Sample.Status.ABORTED  # the sample's own enum
    assert sample.metadata[INFRA_MARK] == "ConnectionError: refused"
    assert is_infra_marked(sample)
    # An object without slime's Status enum gets the enum's value.
    bare = SimpleNamespace(metadata=None, status="completed")
    mark_infra(bare, "grader down")
    assert (bare.status, bare.remove_sample, bare.metadata) == (
        "aborted",
        True,
        {INFRA_MARK: "grader down"},
    )


def _group(slime: SimpleNamespace, failed: int | None) -> list[Any]:
    group = [slime.Sample(index=i, reward=1.0) for i in range(4)]
    if failed is not None:
        mark_infra(group[failed], "backend gone")
    return group


def test_filter_without_slime_loaded(slime: SimpleNamespace) -> None:
    kept = drop_infra_groups(slime.args(), _group(slime, None))
    dropped = drop_infra_groups(slime.args(), _group(slime, 2))
    assert kept == FilterVerdict(keep=True) and bool(kept) is True
    assert dropped == FilterVerdict(keep=False, reason="collimate_infra_error")
    assert bool(dropped) is False and dropped.keep_when_insufficient is False
    # slime's legacy path wraps what is not its own type: still dropped.
    wrapped = slime.call_dynamic_filter(drop_infra_groups, slime.args(), _group(slime, 0))
    assert slime.should_drop(wrapped, remaining_batch_size=1, target_data_size=8)


def test_filter_answers_with_slimes_own_type(
    slime: SimpleNamespace, slime_filter_types: ModuleType
) -> None:
    out = slime.call_dynamic_filter(drop_infra_groups, slime.args(), _group(slime, 3))
    assert type(out) is slime_filter_types.DynamicFilterOutput
    assert (out.keep, out.reason, out.keep_when_insufficient) == (
        False,
        "collimate_infra_error",
        False,
    )
    # Never kept to fill a short batch.
    assert slime.should_drop(out, remaining_batch_size=1, target_data_size=8)
    ok = slime.call_dynamic_filter(drop_infra_groups, slime.args(), _group(slime, None))
    assert ok.keep and not slime.should_drop(ok, remaining_batch_size=9, target_data_size=8)


def test_filter_looks_into_fanned_out_groups(slime: SimpleNamespace) -> None:
    nested = [_group(slime, None), _group(slime, 1)]
    assert drop_infra_groups(slime.args(), nested).keep is False
    assert drop_infra_groups(slime.args(), [_group(slime, None)]).keep is True
    with pytest.raises(TypeError, match="takes a group"):
        drop_infra_groups(slime.args(), slime.Sample())


def test_removed_for_other_reasons_is_not_an_infra_failure(slime: SimpleNamespace) -> None:
    group = _group(slime, None)
    group[0].remove_sample = True  # e.g. slime's --rollout-sample-filter-path
    group[1].status = slime.Sample.Status.ABORTED
    assert drop_infra_groups(slime.args(), group).keep is True
