"""From a dataset row to what grading it needs (rewards.normalize,
rewards.source_truths, rewards.extract's prompt joining, rewards.rows).

Pure functions first; then what the grader does with a prompt, on the real
local backend: the tests' helpers are the dataset's, a broken prompt is the
dataset's fault (an infra error, never a 0.0).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from collimate_rl import (
    AssertReward,
    CollimateClient,
    GradeResult,
    PytestReward,
    RowTasks,
    candidate_program,
    grade_batch,
    normalize_value,
    prompt_code,
    reward_spec_from_ground_truth,
    row_task,
)
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.rewards.rows import column_ground_truth, hub_ground_truth
from collimate_rl.rewards.source_truths import ground_truth_from_source
from collimate_rl.testing.fixtures import module_backend
from collimate_rl.testing.readme import expected_output, python_blocks, run_snippet

np = pytest.importorskip("numpy", reason="numpy arrays are what parquet readers hand over")

PROMPT = (
    "from typing import List\n\n\n"
    "def scale(xs: List[int], k: int) -> List[int]:\n"
    '    """Every element of xs times k.\n'
    "    >>> scale([1, 2], 3)\n"
    "    [3, 6]\n"
    '    """\n'
)
CHECK = (
    "def check(candidate):\n"
    "    assert candidate([1, 2], 3) == [3, 6]\n"
    "    assert candidate([], 5) == []\n"
)


# --- normalize_value ------------------------------------------------------------


def test_none_filled_keys_are_absent_but_nones_inside_lists_stay() -> None:
    row = {
        "test": "from solution import f",
        "test_list": None,
        "entry_point": None,
        "tests": [{"input": [1], "output": None}],
        "meta": {"a": None, "b": 1},
    }
    assert normalize_value(row) == {
        "test": "from solution import f",
        "tests": [{"input": [1], "output": None}],  # a function that returns None
        "meta": {"b": 1},
    }


def test_numpy_and_tuples_become_plain_lists_and_scalars() -> None:
    value = {
        "test_list": np.array(["assert f(1) == 2", "assert f(2) == 3"], dtype=object),
        "k": np.int64(3),
        "tol": np.float32(0.5),
        "inputs": (np.array([1, 2]), (3, 4)),
    }
    plain = normalize_value(value)
    assert plain == {
        "test_list": ["assert f(1) == 2", "assert f(2) == 3"],
        "k": 3,
        "tol": 0.5,
        "inputs": [[1, 2], [3, 4]],
    }
    assert type(plain["k"]) is int and type(plain["inputs"][0][0]) is int


def test_a_kodcode_row_with_arrow_filled_mbpp_keys_is_a_pytest_row() -> None:
    kodcode = {
        "test": "from solution import f\n\ndef test_f():\n    assert f(1) == 2\n",
        "test_list": None,
        "test_setup_code": None,
        "entry_point": None,
        "input_output": None,
    }
    assert isinstance(reward_spec_from_ground_truth(kodcode), PytestReward)


# --- source strings as ground truths ------------------------------------------------


@pytest.mark.parametrize(
    ("source", "want"),
    [
        (CHECK, {"test": CHECK, "kind": "assert"}),
        (
            "from solution import f\nimport pytest\n\ndef test_one():\n    assert f(1) == 2\n",
            {"kind": "pytest"},
        ),
        (
            "import math\nassert f(1) == 2; assert f(2) == 4\nassert (\n    f(3) == 6\n)\n",
            {
                "kind": "assert",
                "tests": ["assert f(1) == 2", "assert f(2) == 4", "assert (\n    f(3) == 6\n)"],
                "setup": "import math",
            },
        ),
        ("hello world", None),
        ("print('hi')", None),
        ("", None),
    ],
)
def test_source_strings_are_recognised_by_their_shape(
    source: str, want: dict[str, Any] | None
) -> None:
    found = ground_truth_from_source(source)
    if want is None:
        assert found is None
    else:
        assert found is not None and want.items() <= found.items()


def test_a_raw_humaneval_test_takes_the_entry_point_given_beside_it() -> None:
    spec = reward_spec_from_ground_truth(CHECK, "scale")
    assert isinstance(spec, AssertReward) and spec.entry == "scale" and spec.check == CHECK


def test_an_unrecognised_string_names_the_accepted_shapes() -> None:
    with pytest.raises(ValueError, match="not JSON") as info:
        reward_spec_from_ground_truth("the answer is 42")
    for shape in ("JSON", "HumanEval", "check(candidate)", "KodCode", "assert statements"):
        assert shape in str(info.value)


# --- prompt_code and candidate_program ------------------------------------------------


def test_prompt_code_reads_text_conversations_and_fences() -> None:
    assert prompt_code(PROMPT, "scale") == PROMPT
    chat = [
        {"role": "system", "content": "You write Python."},
        {"role": "user", "content": f"Complete this function:\n```python\n{PROMPT}```\nThanks."},
    ]
    assert prompt_code(chat, "scale") == PROMPT
    parts = [{"role": "user", "content": [{"type": "text", "text": PROMPT}]}]
    assert prompt_code(parts, "scale") == PROMPT
    assert prompt_code("Write a function that scales a list.", "scale") is None
    assert prompt_code(PROMPT, "other_name") is None
    assert prompt_code(None, "scale") is None


@pytest.mark.parametrize(
    "completion",
    [
        "    return [x * k for x in xs]\n",  # human-eval style: the body, indented
        "return [x * k for x in xs]",  # flush left
        "```python\nout = [x * k for x in xs]\nreturn out\n```",  # fenced body
        "<think>easy</think>    return [x * k for x in xs]",
    ],
)
def test_a_body_only_completion_is_placed_inside_the_prompts_function(completion: str) -> None:
    program = candidate_program(completion, "scale", PROMPT)
    assert program.startswith(PROMPT)
    namespace: dict[str, Any] = {}
    exec(compile(program, "<program>", "exec"), namespace)
    assert namespace["scale"]([1, 2], 3) == [3, 6]


def test_a_whole_function_follows_the_prompt_and_keeps_its_imports() -> None:
    completion = (
        "Sure! Here it is:\n```python\ndef scale(xs: List[int], k: int) -> List[int]:\n"
        "    return [x * k for x in xs]\n```\nIt multiplies."
    )
    program = candidate_program(completion, "scale", PROMPT)
    assert program.startswith(PROMPT)
    ast.parse(program)
    namespace: dict[str, Any] = {}
    exec(compile(program, "<program>", "exec"), namespace)  # `List` comes from the prompt
    assert namespace["scale"]([2], 2) == [4]


def test_without_a_code_prompt_or_with_joining_off_it_is_extract_code() -> None:
    completion = "```python\ndef scale(xs, k):\n    return xs\n```"
    expected = "def scale(xs, k):\n    return xs"
    assert candidate_program(completion, "scale") == expected
    assert candidate_program(completion, "scale", PROMPT, join_prompt=False) == expected
    assert candidate_program(completion, "scale", "Write scale().") == expected


# --- row_task / RowTasks ----------------------------------------------------------------


def test_row_task_takes_entry_and_prompt_from_the_rows_columns() -> None:
    row = {"task_id": "HumanEval/x", "prompt": PROMPT, "entry_point": "scale", "test": CHECK}
    task = row_task(row["test"], row=row)
    assert task.entry == "scale" and task.prompt == PROMPT
    assert isinstance(task.spec, AssertReward) and task.spec.prompt == PROMPT
    assert task.program("    return []\n").startswith(PROMPT)
    off = row_task(row["test"], row=row, join_prompt=False)
    assert off.program("    return []\n") == "return []"


def test_an_explicit_entry_wins_and_a_spec_names_its_own() -> None:
    apps = {"input_output": '{"fn_name": "twice", "inputs": [[1]], "outputs": [2]}'}
    assert row_task(apps).entry == "twice"
    assert row_task(apps, entry="solve_it", row={"entry_point": "other"}).entry == "solve_it"
    assert row_task(["assert f(1) == 1"], row={"fn_name": "f"}).entry == "f"


def test_row_tasks_build_a_repeated_row_once_and_do_not_cache_errors() -> None:
    tasks = RowTasks(size=2)
    row = {"prompt": PROMPT, "entry_point": "scale"}
    first = tasks.get(CHECK, row=row)
    assert tasks.get(CHECK, row=dict(row)) is first
    assert tasks.get(CHECK, row={**row, "prompt": "Write scale()."}) is not first
    for _ in range(2):
        with pytest.raises(ValueError):
            tasks.get("not a ground truth at all")
    tasks.get(["assert scale([], 1) == []"], row=row)
    tasks.get(["assert scale([1], 1) == [1]"], row=row)
    assert tasks.get(CHECK, row=row) is not first  # evicted (size 2)


# --- GradeResult.explain ----------------------------------------------------------------


def test_explain_says_what_failed_first() -> None:
    failed = GradeResult(
        reward=0.5,
        detail={
            "passed": 1,
            "total": 2,
            "failed": [{"index": 1, "reason": "wrong_answer", "message": "AssertionError: 3 != 4"}],
        },
    )
    assert failed.explain() == (
        "failed 0.5; 1/2 tests passed; first failure: test 1 wrong_answer: AssertionError: 3 != 4"
    )
    infra = GradeResult(reward=0.0, infra_error=True, error="the grader was killed")
    assert infra.explain() == "infra_error: the grader was killed"
    assert GradeResult(reward=1.0, detail={"passed": 3, "total": 3}).explain() == (
        "passed 1; 3/3 tests passed"
    )


# --- the grader and the prompt, on the real backend ----------------------------------------


backend, client = module_backend()


HELPER_PROMPT = (
    "def shift(s: str) -> str:\n"
    '    """Each letter one place on."""\n'
    "    return ''.join(chr((ord(c) - 97 + 1) % 26 + 97) for c in s)\n\n\n"
    "def unshift(s: str) -> str:\n"
    '    """Undo shift."""\n'
)
HELPER_CHECK = (
    "def check(candidate):\n"
    "    for word in ('abc', 'xyz', 'hello'):\n"
    "        assert candidate(shift(word)) == word\n"
)


def test_the_checks_helpers_are_the_datasets_not_the_candidates(client: CollimateClient) -> None:
    task = row_task(HELPER_CHECK, row={"prompt": HELPER_PROMPT, "entry_point": "unshift"})
    right = "    return ''.join(chr((ord(c) - 97 - 1) % 26 + 97) for c in s)\n"
    # the hack: make the helper the identity, then the identity passes a naive check
    hack = "```python\ndef shift(s):\n    return s\n\ndef unshift(s):\n    return s\n```"
    results = grade_batch(client, "py", [task.program(right), task.program(hack)], [task.spec] * 2)
    assert [r.reward for r in results] == [1.0, 0.0]
    assert not any(r.infra_error for r in results)


def test_a_prompt_that_fails_to_run_is_the_datasets_fault(client: CollimateClient) -> None:
    broken = "raise RuntimeError('bad dataset row')\n\ndef unshift(s):\n    '''d'''\n"
    spec = AssertReward(check=HELPER_CHECK, entry="unshift", prompt=broken)
    [result] = grade_batch(
        client, "py", ["def unshift(s):\n    return s\n"], [spec], on_infra_error="zero"
    )
    assert result.infra_error and result.reward == 0.0, result
    assert "the prompt code failed: RuntimeError: bad dataset row" in (result.error or "")


def test_the_docs_row_example_prints_what_it_shows(backend: LocalCollimateBackend) -> None:
    """The row example of docs/datasets.md (moved there from core's README)."""
    page = Path(__file__).resolve().parents[3] / "docs" / "datasets.md"
    if not page.exists():
        pytest.skip("the monorepo's docs/ (not in an sdist of core)")
    (block,) = python_blocks(page, containing="row_task(")
    out = run_snippet(block, env={"COLLIMATE_SERVE_URL": backend.base_url})
    assert out == expected_output(block) == ["1.0 | passed 1; 1/1 tests passed"]


def test_sanitized_mbpps_test_imports_run_before_the_asserts() -> None:
    row = {
        "task_id": 3,
        "prompt": "Write a function to find the area of a circle.",
        "test_imports": ["import math"],
        "test_list": ["assert math.isclose(area(1), 3.14159, rel_tol=1e-4)"],
    }
    spec = reward_spec_from_ground_truth(row)
    assert isinstance(spec, AssertReward) and spec.setup == "import math"
    assert spec.prompt is None  # the task sentence is not code


def test_numpy_strings_and_floats_become_plain_python() -> None:
    plain = normalize_value(
        {"prompt": np.str_("def f(x):\n    'd'\n"), "outputs": [np.float64(3.0)], "ok": np.bool_(1)}
    )
    assert type(plain["prompt"]) is str and type(plain["outputs"][0]) is float
    assert plain["ok"] is True
    chat = np.array([{"role": "user", "content": np.str_("def f(x):\n    'd'\n")}], dtype=object)
    assert prompt_code(chat, "f") == "def f(x):\n    'd'\n"
    spec = reward_spec_from_ground_truth(
        {"fn_name": "double", "inputs": [[np.float64(1.5)]], "outputs": [np.float64(3.0)]}
    )
    assert "np." not in repr(spec.guest_config())


def test_a_prompt_is_found_by_the_entry_the_ground_truth_names() -> None:
    # verl's HumanEval rows: the entry point sits in the ground truth, not a column
    task = row_task({"test": CHECK, "entry_point": "scale"}, prompt=PROMPT)
    assert task.entry == "scale" and task.prompt == PROMPT
    assert isinstance(task.spec, AssertReward) and task.spec.prompt == PROMPT


def test_a_whole_humaneval_row_as_the_ground_truth_carries_its_prompt() -> None:
    row = {"prompt": PROMPT, "test": CHECK, "entry_point": "scale", "task_id": "X/1"}
    task = row_task(row)
    assert task.entry == "scale" and task.prompt == PROMPT
    assert task.program("    return []\n").startswith(PROMPT)


def test_mbpps_test_list_column_comes_with_its_setup_columns() -> None:
    row = {"test_list": ["assert f(1)"], "test_imports": ["import math"], "test_setup_code": None}
    assert column_ground_truth(row, "test_list") == {
        "test_list": ["assert f(1)"],
        "test_imports": ["import math"],
    }
    assert hub_ground_truth({"text": "x", **row}) == column_ground_truth(row, "test_list")
    assert hub_ground_truth({"input_output": "{}", "test": "t"}) == "{}"
    assert hub_ground_truth({"prompt": "p"}) is None


def test_a_failing_bare_assert_says_which(client: CollimateClient) -> None:
    spec = reward_spec_from_ground_truth(["assert f(1) == 2", "assert f(2) == 5"], "f")
    [result] = grade_batch(client, "py", ["def f(x):\n    return 2 * x\n"], [spec])
    assert result.explain() == (
        "failed 0.5; 1/2 tests passed; first failure: test 1 wrong_answer: "
        "AssertionError: assert f(2) == 5"
    )


def test_a_bare_asserts_statement_stays_out_of_what_a_policy_reads(
    client: CollimateClient,
) -> None:
    from collimate_rl.pipeline.redact import sealed_lines, sealed_result

    spec = reward_spec_from_ground_truth(["assert f(2) == 5  # SECRET-MARK"], "f")
    [result] = grade_batch(client, "py", ["def f(x):\n    return x\n"], [spec])
    [entry] = result.detail["failed"]
    assert entry["message"].rstrip(": ") == "AssertionError"  # the message carries no test
    assert "SECRET-MARK" in entry["statement"] and "SECRET-MARK" in result.explain()
    shown = sealed_result(result, sealed_lines(["assert f(2) == 5  # SECRET-MARK"]))
    assert "SECRET-MARK" not in repr(shown.detail) and "SECRET-MARK" not in shown.explain()
