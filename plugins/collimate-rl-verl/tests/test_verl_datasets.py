"""``compute_score`` on verl-style parquet rows, handed over as verl hands them.

Rows in verl's parquet layout (``data_source``, a chat ``prompt``,
``ability``, ``reward_model`` {``style``, ``ground_truth``}, ``extra_info``
{``split``, ``index``, ...}) are written with pandas / pyarrow and read
back as verl's ``RLHFDataset`` reads them
(``datasets.load_dataset("parquet", ...)``). From there on verl's own code
runs, from its wheel (``conftest.py``): ``RLHFDataset.__getitem__``,
``collate_fn``, the rollout's ``n`` responses per prompt
(``DataProto.repeat``: ``np.repeat`` of the non-tensors), the reward loop's
``compute_score_batch`` and ``NaiveRewardManager.run_single``, which passes
``data_item.non_tensor_batch["reward_model"]["ground_truth"]`` and
``extra_info`` to ``compute_score``. Grading is on a real local backend,
over TCP and a unix socket.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from collimate_rl.verl import compute_score, compute_score_async, compute_score_batch

np = pytest.importorskip("numpy")
pd = pytest.importorskip("pandas")
datasets = pytest.importorskip("datasets")
hub_rows = pytest.importorskip("collimate_rl.testing.hub_rows")

#: a response with no code in it: 0.0 whatever the row
PROSE = "I am not sure how to solve this one."
KEYS = {"score", "acc", "passed", "total", "verdict", "infra_error", "error", "reason"}
FUNCTIONS = {"compute_score": compute_score, "compute_score_async": compute_score_async}


# -- verl's path from a parquet file to compute_score -------------------------------


def write_parquet(rows: list[dict[str, Any]], path: Path) -> Path:
    """As verl's preprocessing scripts save a split: a pandas DataFrame of
    the rows, written by pyarrow (which types each struct column as the
    union of its rows' keys)."""
    pd.DataFrame(rows).to_parquet(path)
    return path


def load_rows(path: Path) -> Any:
    """``RLHFDataset._read_files_and_tokenize``'s read of a parquet file."""
    return datasets.load_dataset("parquet", data_files=str(path))["train"]


def reward_loop(
    code: dict[str, Any], path: Path, responses: list[list[str]], fn: Any
) -> tuple[list[dict[str, Any]], Any]:
    """One step's rewards of the rows in ``path`` (row ``i`` answered by
    ``responses[i]``), as verl computes them with ``fn`` as its
    ``custom_reward_function``: the reward loop's outputs, and the batch."""
    frame = load_rows(path)
    dataset = SimpleNamespace(
        dataframe=frame,
        prompt_key="prompt",
        image_key="images",
        video_key="videos",
        audio_key="audios",
        processor=None,
        need_tools_kwargs=False,
    )
    dataset._build_messages = lambda example, key: code["RLHFDataset._build_messages"](
        dataset, example, key
    )
    items = [code["RLHFDataset.__getitem__"](dataset, i) for i in range(len(frame))]
    collated = code["collate_fn"](items)
    n = len(responses[0])
    non_tensor = {
        key: np.repeat(value, n, axis=0)  # DataProto.repeat(n, interleave=True)
        for key, value in collated.items()
        if isinstance(value, np.ndarray)
    }
    texts = [text for row in responses for text in row]
    width = max(len(t) for t in texts)
    prompt = [1, 1, 1, 1]
    Batch, Vector = code["DataProto"], code["torch"].Tensor  # (conftest's stand-ins)
    data = Batch(
        {
            "prompts": [Vector(prompt) for _ in texts],
            "responses": [Vector([ord(c) for c in t] + [0] * (width - len(t))) for t in texts],
            "attention_mask": [
                Vector(prompt + [1] * len(t) + [0] * (width - len(t))) for t in texts
            ],
        },
        non_tensor,
    )
    manager = SimpleNamespace(
        compute_score=fn,
        is_async_reward_score=inspect.iscoroutinefunction(fn),
        reward_router_address=None,
        reward_model_tokenizer=None,
        tokenizer=SimpleNamespace(
            decode=lambda ids, skip_special_tokens=True: "".join(chr(i) for i in ids)
        ),
    )

    async def step() -> list[dict[str, Any]]:
        manager.loop = asyncio.get_running_loop()
        worker = SimpleNamespace(
            compute_score=lambda d: code["NaiveRewardManager.run_single"](manager, d)
        )
        return list(await code["RewardLoopWorker.compute_score_batch"](worker, data))

    return asyncio.run(step()), data


def extra_columns(outputs: list[dict[str, Any]]) -> dict[str, Any]:
    """``RewardLoopManager.compute_rm_score``: the keys of the first sample's
    dict, one numpy column each (a key missing from another dict raises)."""
    infos = [output.get("reward_extra_info", {}) for output in outputs]
    keys = list(infos[0].keys())
    return {key: np.array([info[key] for info in infos]) for key in keys}


def scores(outputs: list[dict[str, Any]]) -> list[float]:
    return [output["reward_score"] for output in outputs]


def grouped(values: list[Any], size: int) -> list[list[Any]]:
    return [values[i : i + size] for i in range(0, len(values), size)]


# -- rows mixing every dataset's ground truth --------------------------------------


def mixed_verl_rows() -> tuple[list[dict[str, Any]], list[Any]]:
    """:func:`hub_rows.mixed_rows` in verl's layout: each ground truth a
    struct holding only its own keys (pyarrow unifies them on write), the
    HumanEval prompts in ``extra_info["prompt"]`` (the other rows have
    none: pyarrow fills ``None``)."""
    table = hub_rows.mixed_rows()
    rows = []
    for i, (row, case) in enumerate(zip(table.dataset, table.cases, strict=True)):
        info: dict[str, Any] = {"split": "train", "index": i}
        if case.source == "openai_humaneval":
            info["prompt"] = row["prompt"]
        rows.append(
            {
                "data_source": case.source,
                "prompt": [{"role": "user", "content": row["prompt"]}],
                "ability": "code",
                "reward_model": {
                    "style": "rule",
                    "ground_truth": {k: v for k, v in row["ground_truth"].items() if v is not None},
                },
                "extra_info": info,
            }
        )
    return rows, list(table.cases)


def test_the_parquet_file_really_has_none_filled_keys(tmp_path: Path) -> None:
    rows, cases = mixed_verl_rows()
    frame = load_rows(write_parquet(rows, tmp_path / "train.parquet"))
    i = next(i for i, c in enumerate(cases) if c.source == "kodcode")
    assert frame[i]["reward_model"]["ground_truth"]["test_list"] is None
    assert frame[i]["extra_info"]["prompt"] is None


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_parquet_rows_mixing_every_datasets_shape_grade_right(
    verl_rows_code: dict[str, Any],
    custom_reward_fn: Any,
    target: dict[str, str],
    tmp_path: Path,
    name: str,
) -> None:
    rows, cases = mixed_verl_rows()
    path = write_parquet(rows, tmp_path / "train.parquet")
    fn = custom_reward_fn("pkg://collimate_rl.verl", name, target)
    responses = [[case.right, case.wrong, PROSE] for case in cases]
    outputs, _ = reward_loop(verl_rows_code, path, responses, fn)
    for case, (right, wrong, prose) in zip(cases, grouped(scores(outputs), 3), strict=True):
        assert right == 1.0, case
        assert 0.0 <= wrong < 1.0, case  # (pass-rate kinds give the tests it passes)
        assert prose == 0.0, case
    columns = extra_columns(outputs)
    assert set(columns) == KEYS
    assert list(columns["score"]) == scores(outputs)


def test_pandas_rows_with_numpy_arrays(target: dict[str, str], tmp_path: Path) -> None:
    """verl's older loaders (and the ``prime`` manager's users) read the
    parquet file with pandas: every list is a numpy array, ``extra_info``
    and the ground truths hold ``None`` for the keys a row lacks."""
    rows, cases = mixed_verl_rows()
    path = write_parquet(rows, tmp_path / "train.parquet")
    records = pd.read_parquet(path).to_dict("records")
    arrays = [
        r["reward_model"]["ground_truth"]["test_list"]
        for r, c in zip(records, cases, strict=True)
        if c.source == "mbpp"
    ]
    assert all(isinstance(a, np.ndarray) for a in arrays)
    for record, case in zip(records, cases, strict=True):
        for response, want in ((case.right, 1.0), (PROSE, 0.0)):
            result = compute_score(
                record["data_source"],
                response,
                record["reward_model"]["ground_truth"],
                record["extra_info"],
                **target,
            )
            assert result["score"] == want, (case, result["reason"])


def test_numpy_strings(target: dict[str, str]) -> None:
    """numpy's ``str_`` (a ``str`` subclass) in the ground truth, the prompt
    and the entry point are graded as the strings they are."""
    problem = hub_rows.humaneval_problems()[0]
    truth = {"test": np.str_(problem["test"]), "entry_point": np.str_(problem["entry_point"])}
    info = {"index": np.int64(0), "prompt": np.str_(problem["prompt"])}
    result = compute_score("openai_humaneval", problem["canonical_solution"], truth, info, **target)
    assert result["score"] == 1.0, result["reason"]


def test_verl_rows_with_json_ground_truths_and_chat_answers(
    verl_rows_code: dict[str, Any], custom_reward_fn: Any, target: dict[str, str], tmp_path: Path
) -> None:
    """:func:`hub_rows.verl_rows`: the schema verl's preprocessing writes,
    ground truths as JSON strings, answers with the whole function fenced."""
    table = hub_rows.verl_rows()
    path = tmp_path / "test.parquet"
    table.dataset.to_parquet(str(path))
    fn = custom_reward_fn("pkg://collimate_rl.verl", "compute_score", target)
    responses = [[case.right, case.wrong] for case in table.cases]
    outputs, _ = reward_loop(verl_rows_code, path, responses, fn)
    assert scores(outputs) == [1.0, 0.0] * len(table.cases)


# -- HumanEval: the response is the function's body ---------------------------------

#: eight real HumanEval problems, several whose prompt has helpers the
#: check or the solution uses (10 is_palindrome, 32 poly, 38 encode_cyclic,
#: 50 encode_shift)
HUMANEVAL_TASKS = (0, 10, 17, 32, 38, 50, 100, 163)


@pytest.fixture(scope="module")
def humaneval8() -> list[dict[str, str]]:
    problems = hub_rows.humaneval_problems()
    return [problems[i] for i in HUMANEVAL_TASKS]


def humaneval_verl_rows(problems: list[dict[str, str]], *, prompt_in: str) -> list[dict[str, Any]]:
    """HumanEval in verl's layout. ``prompt_in``: ``"extra_info"`` (the
    ground truth is ``test`` + ``entry_point``, ``extra_info["prompt"]`` the
    prompt) or ``"ground_truth"`` (the whole HumanEval row as a JSON string,
    ``extra_info`` without a prompt)."""
    rows = []
    for i, p in enumerate(problems):
        info: dict[str, Any] = {"split": "test", "index": i, "task_id": p["task_id"]}
        if prompt_in == "extra_info":
            truth: Any = {"test": p["test"], "entry_point": p["entry_point"]}
            info["prompt"] = p["prompt"]
        else:
            truth = json.dumps({k: p[k] for k in ("prompt", "test", "entry_point")})
        rows.append(
            {
                "data_source": "openai_humaneval",
                "prompt": [{"role": "user", "content": p["prompt"]}],
                "ability": "code",
                "reward_model": {"style": "rule", "ground_truth": truth},
                "extra_info": info,
            }
        )
    return rows


@pytest.mark.parametrize("prompt_in", ["extra_info", "ground_truth"])
def test_humaneval_body_only_responses_are_graded_as_prompt_plus_response(
    verl_rows_code: dict[str, Any],
    custom_reward_fn: Any,
    target: dict[str, str],
    tmp_path: Path,
    humaneval8: list[dict[str, str]],
    prompt_in: str,
) -> None:
    path = write_parquet(
        humaneval_verl_rows(humaneval8, prompt_in=prompt_in), tmp_path / "he.parquet"
    )
    fn = custom_reward_fn("pkg://collimate_rl.verl", "compute_score_async", target)
    responses = [[p["canonical_solution"], "    return None\n"] for p in humaneval8]
    outputs, _ = reward_loop(verl_rows_code, path, responses, fn)
    assert scores(outputs) == [1.0, 0.0] * len(HUMANEVAL_TASKS)


def test_join_prompt_off_through_reward_kwargs(
    verl_rows_code: dict[str, Any],
    custom_reward_fn: Any,
    target: dict[str, str],
    tmp_path: Path,
    humaneval8: list[dict[str, str]],
) -> None:
    first = humaneval8[:1]
    path = write_parquet(humaneval_verl_rows(first, prompt_in="extra_info"), tmp_path / "a.pq")
    fn = custom_reward_fn(
        "pkg://collimate_rl.verl", "compute_score", {**target, "join_prompt": False}
    )
    body = first[0]["canonical_solution"]
    whole = hub_rows.whole_function(first[0]["prompt"], body)
    outputs, _ = reward_loop(verl_rows_code, path, [[body, whole]], fn)
    assert scores(outputs) == [0.0, 1.0]


def test_the_batch_reward_manager(
    target: dict[str, str], tmp_path: Path, humaneval8: list[dict[str, str]]
) -> None:
    """``BatchRewardManager.verify``: numpy object arrays of the data
    sources and extra_infos, the ground truths as a list."""
    path = write_parquet(humaneval_verl_rows(humaneval8, prompt_in="extra_info"), tmp_path / "b.pq")
    frame = load_rows(path)
    reward_model = np.array([frame[i]["reward_model"] for i in range(len(frame))], dtype=object)
    results = compute_score_batch(
        data_sources=np.array([frame[i]["data_source"] for i in range(len(frame))], dtype=object),
        solution_strs=[p["canonical_solution"] for p in humaneval8],
        ground_truths=[item.get("ground_truth", None) for item in reward_model],
        extra_infos=np.array([frame[i]["extra_info"] for i in range(len(frame))], dtype=object),
        **target,
    )
    assert [r["score"] for r in results] == [1.0] * len(HUMANEVAL_TASKS)
    assert all(set(r) == KEYS for r in results)


# -- errors name the dataset row ---------------------------------------------------------


def _rows_with_a_bad_one() -> list[dict[str, Any]]:
    good = json.dumps({"test_list": ["assert f() == 1"]})
    return [
        {
            "data_source": "mbpp",
            "prompt": [{"role": "user", "content": "Write f."}],
            "ability": "code",
            "reward_model": {"style": "rule", "ground_truth": truth},
            "extra_info": {"split": "train", "index": index},
        }
        for index, truth in ((5, good), (6, good), (7, json.dumps({"nope": 1})))
    ]


def test_a_bad_ground_truth_names_the_rows_index(
    verl_rows_code: dict[str, Any], custom_reward_fn: Any, target: dict[str, str], tmp_path: Path
) -> None:
    path = write_parquet(_rows_with_a_bad_one(), tmp_path / "bad.parquet")
    fn = custom_reward_fn("pkg://collimate_rl.verl", "compute_score", target)
    with pytest.raises(
        ValueError, match=r"the 'mbpp' row extra_info\['index'\]=7 of split 'train' is not a test"
    ):
        reward_loop(verl_rows_code, path, [["x"], ["x"], ["x"]], fn)


def test_the_batch_manager_names_the_batch_position_too(target: dict[str, str]) -> None:
    rows = _rows_with_a_bad_one()
    with pytest.raises(ValueError, match=r"extra_info\['index'\]=7 .*\(batch position 2\)$"):
        compute_score_batch(
            [r["data_source"] for r in rows],
            ["x"] * 3,
            [r["reward_model"]["ground_truth"] for r in rows],
            [r["extra_info"] for r in rows],
            **target,
        )


def test_a_task_id_names_it_when_there_is_no_index() -> None:
    with pytest.raises(ValueError, match=r"row extra_info\['task_id'\]='HumanEval/9' is not"):
        compute_score("humaneval", "x", "42", {"task_id": "HumanEval/9"})


# -- why a score is what it is, in verl's columns and metrics --------------------------


def test_the_reason_is_a_column_verl_keeps_and_its_metrics_skip(
    verl_rows_code: dict[str, Any], custom_reward_fn: Any, target: dict[str, str], tmp_path: Path
) -> None:
    """Every dict has the same keys, ``reason`` among them: verl's reward
    loop makes each key a numpy column (from the first dict's keys), and
    its validation metrics (``process_validation_metrics``, its own code)
    average the numeric ones and pass over the strings."""
    table = hub_rows.mbpp_rows()
    rows = [
        {
            "data_source": "mbpp",
            "prompt": [{"role": "user", "content": row["text"]}],
            "ability": "code",
            "reward_model": {
                "style": "rule",
                "ground_truth": json.dumps(
                    {"test_list": row["test_list"], "test_setup_code": row["test_setup_code"]}
                ),
            },
            "extra_info": {"split": "test", "index": i},
        }
        for i, row in enumerate(table.dataset)
    ]
    path = write_parquet(rows, tmp_path / "mbpp.parquet")
    fn = custom_reward_fn("pkg://collimate_rl.verl", "compute_score", target)
    responses = [[case.right, case.wrong] for case in table.cases]
    outputs, data = reward_loop(verl_rows_code, path, responses, fn)
    assert scores(outputs) == [1.0, 0.0, 1.0, 0.0]
    columns = extra_columns(outputs)
    assert list(columns["reason"]) == [
        "passed 1; 3/3 tests passed",
        columns["reason"][1],
        "passed 1; 3/3 tests passed",
        columns["reason"][3],
    ]
    assert columns["reason"][1].startswith("failed 0; 0/3 tests passed; first failure: test 0 ")
    uids = [f"prompt-{i // 2}" for i in range(len(outputs))]
    infos = {"reward": scores(outputs), **{k: v.tolist() for k, v in columns.items()}}
    metrics = verl_rows_code["process_validation_metrics"](
        list(data.non_tensor_batch["data_source"]), uids, infos
    )
    assert metrics["mbpp"]["score"]["mean@2"] == 0.5
    assert metrics["mbpp"]["acc"]["mean@2"] == 0.5
    assert "reason" not in metrics["mbpp"] and "verdict" not in metrics["mbpp"]


def test_the_reason_goes_to_the_debug_log_naming_the_row(
    target: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    truth = {"test_list": ["assert f() == 1", "assert f() != 2"]}
    with caplog.at_level(logging.DEBUG, logger="collimate_rl.verl"):
        compute_score("mbpp", "def f():\n    return 2", truth, {"index": 3}, **target)
    assert (
        "the 'mbpp' row extra_info['index']=3: failed 0; 0/2 tests passed; first failure: test 0 "
        in caplog.text
    )
