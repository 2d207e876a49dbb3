"""The test formats of real code datasets, graded on the real local backend.

Every row below is written in its dataset's own shape (as it comes out of
the dataset, a JSON string of it too) and goes through
``reward_spec_from_ground_truth`` with no renaming: a right solution scores
1.0, a wrong one 0.0, a partly right one the fraction; ``scoring: "all"``
gives 1.0 or 0.0; a malformed row raises a ValueError naming what is wrong.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from collimate_rl import (
    AssertReward,
    CallReward,
    CollimateClient,
    PytestReward,
    StdinStdoutReward,
    grade,
    reward_spec_from_ground_truth,
)
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.rewards import GuestReward
from collimate_rl.rewards.shipping import PackItem, ship_pack
from collimate_rl.rewards.spec import candidate_context
from collimate_rl.rewards.verdict import read_frames
from collimate_rl.seeds import fresh_seed

TEMPLATE = "py"


@pytest.fixture(scope="module")
def client() -> Iterator[CollimateClient]:
    with LocalCollimateBackend() as backend, CollimateClient(backend.base_url) as c:
        yield c


MBPP = {
    "task_id": 2,
    "text": "Write a function to find the shared elements from the given two lists.",
    "test_setup_code": "",
    "test_list": [
        "assert set(similar_elements((3, 4, 5, 6),(5, 7, 4, 10))) == set((4, 5))",
        "assert set(similar_elements((1, 2, 3, 4),(5, 4, 3, 7))) == set((3, 4))",
        "assert set(similar_elements((11, 12, 14, 13),(17, 15, 14, 13))) == set((13, 14))",
        "assert similar_elements((1,), (2,)) == ()",
    ],
    "challenge_test_list": [],
}
MBPP_RIGHT = "def similar_elements(a, b):\n    return tuple(sorted(set(a) & set(b)))\n"
MBPP_WRONG = "def similar_elements(a, b):\n    return (0,)\n"
MBPP_HALF = "def similar_elements(a, b):\n    return tuple(set(a) & set(b)) if a[0] < 5 else ()\n"

ACECODER = {
    "id": "oss_1",
    "test_cases": [
        "assert add_one([1, 2]) == [2, 3]",
        "assert add_one([]) == []",
        "assert add_one([-1]) == [0]",
        "assert add_one([10, 20, 30]) == [11, 21, 31]",
    ],
}

HUMANEVAL = {
    "task_id": "HumanEval/10",
    "entry_point": "make_palindrome",
    "test": (
        "\n\nMETADATA = {\n    'author': 'jt',\n    'dataset': 'test'\n}\n\n\n"
        "def check(candidate):\n"
        "    assert candidate('') == ''\n"
        "    assert candidate('x') == 'x'\n"
        "    assert candidate('xyz') == 'xyzyx'\n"
        "    assert candidate('xyx') == 'xyx'\n"
        "    assert candidate('jerry') == 'jerryrrej'\n"
        "    assert is_palindrome('aba')\n"  # a helper the prompt defines
    ),
}
HUMANEVAL_RIGHT = (
    "def is_palindrome(string: str) -> bool:\n    return string == string[::-1]\n\n"
    "def make_palindrome(string: str) -> str:\n"
    "    if not string:\n        return ''\n"
    "    beginning_of_suffix = 0\n"
    "    while not is_palindrome(string[beginning_of_suffix:]):\n"
    "        beginning_of_suffix += 1\n"
    "    return string + string[:beginning_of_suffix][::-1]\n"
)
HUMANEVAL_WRONG = (
    "def is_palindrome(string: str) -> bool:\n    return string == string[::-1]\n\n"
    "def make_palindrome(string: str) -> str:\n    return string + string[::-1]\n"
)

KODCODE = {
    "question_id": "Leetcode_1",
    "test": (
        "from solution import merge_intervals, Counter\nimport pytest\n\n"
        "def test_merge_basic():\n"
        "    assert merge_intervals([[1, 3], [2, 6], [8, 10]]) == [[1, 6], [8, 10]]\n\n"
        "def test_merge_empty():\n    assert merge_intervals([]) == []\n\n"
        "def test_merge_bad_input():\n"
        "    with pytest.raises(ValueError):\n        merge_intervals(None)\n\n"
        "@pytest.mark.parametrize('given, want',\n"
        "                         [([[1, 4], [4, 5]], [[1, 5]]), ([[1, 2]], [[1, 2]])])\n"
        "def test_merge_param(given, want):\n    assert merge_intervals(given) == want\n\n"
        "class TestCounter:\n"
        "    def test_counts(self):\n"
        "        c = Counter()\n        c.add(2)\n        c.add(3)\n"
        "        assert c.total == pytest.approx(5.0)\n\n"
        "def test_in_place():\n"
        "    data = [[8, 10], [1, 3]]\n    merge_intervals(data)\n"
        "    assert data == [[1, 3], [8, 10]]  # the candidate sorts in place\n"
    ),
}
KODCODE_RIGHT = (
    "class Counter:\n    def __init__(self):\n        self.total = 0.0\n"
    "    def add(self, x):\n        self.total += x\n\n"
    "def merge_intervals(intervals):\n"
    "    if intervals is None:\n        raise ValueError('no intervals')\n"
    "    intervals.sort()\n    out = []\n"
    "    for start, end in intervals:\n"
    "        if out and start <= out[-1][1]:\n            out[-1][1] = max(out[-1][1], end)\n"
    "        else:\n            out.append([start, end])\n"
    "    return [list(x) for x in out]\n"
)
KODCODE_WRONG = "class Counter:\n    pass\n\ndef merge_intervals(intervals):\n    return None\n"

APPS = {
    "problem_id": 4,
    "input_output": json.dumps(
        {
            "fn_name": "twoSum",
            "inputs": [[[2, 7, 11, 15], 9], [[3, 2, 4], 6], [[3, 3], 6], [[1, 5, 9], 14]],
            "outputs": [[[0, 1]], [[1, 2]], [[0, 1]], [[1, 2]]],
        }
    ),
}
APPS_RIGHT = (
    "class Solution:\n    def twoSum(self, nums, target):\n        seen = {}\n"
    "        for i, x in enumerate(nums):\n"
    "            if target - x in seen:\n                return (seen[target - x], i)\n"
    "            seen[x] = i\n"
)
APPS_HALF = "def twoSum(nums, target):\n    return [0, 1]\n"

LCB_FUNCTIONAL = {
    "question_id": "abc1",
    "public_test_cases": json.dumps(
        [
            {"input": "[1, 2, 3]\n2", "output": "5", "testtype": "functional"},
            {"input": "[4, 4]\n1", "output": "4", "testtype": "functional"},
        ]
    ),
    "private_test_cases": json.dumps(
        [{"input": "[0]\n1", "output": "0", "testtype": "functional"}]
    ),
    "metadata": json.dumps({"func_name": "sumLargest"}),
}
LCB_RIGHT = (
    "class Solution:\n    def sumLargest(self, nums, k):\n        return sum(sorted(nums)[-k:])\n"
)
LCB_WRONG = "class Solution:\n    def sumLargest(self, nums, k):\n        return -1\n"

OPENR1 = {
    "language": "python",
    "test_cases": [
        {"input": "3\n1 2 3\n", "output": "6\n", "type": "stdin_stdout"},
        {"input": "2\n5 5\n", "output": "10", "type": "stdin_stdout"},
        {"input": "1\n7\n", "output": "7\n\n", "type": "stdin_stdout"},
        {"input": "1\n-1\n", "output": "-1", "type": "stdin_stdout"},
    ],
}
OPENR1_RIGHT = "input()\nprint(sum(map(int, input().split())))\n"
OPENR1_HALF = "n = int(input())\nprint(sum(map(int, input().split())) if n > 1 else 0)\n"

LCB_STDIN = [
    {"input": "2\n", "output": "4\n", "testtype": "stdin"},
    {"input": "5\n", "output": "25", "testtype": "stdin"},
]
LCB_STDIN_RIGHT = "n = int(input())\nprint(n * n, end='  \\n\\n')\n"  # stripped lines
LCB_STDIN_SHORT = "pass\n"  # no output at all never passes

CASES: list[tuple[str, Any, type, str, list[tuple[str, float]]]] = [
    (
        "mbpp",
        MBPP,
        AssertReward,
        "solve",
        [(MBPP_RIGHT, 1.0), (MBPP_WRONG, 0.0), (MBPP_HALF, 0.75)],
    ),
    (
        "acecoder",
        ACECODER,
        AssertReward,
        "solve",
        [
            ("def add_one(xs):\n    return [x + 1 for x in xs]\n", 1.0),
            ("def add_one(xs):\n    return xs\n", 0.25),
            ("def add_one(xs):\n    return None\n", 0.0),
        ],
    ),
    (
        "humaneval",
        HUMANEVAL,
        AssertReward,
        "solve",
        [(HUMANEVAL_RIGHT, 1.0), (HUMANEVAL_WRONG, 0.0)],
    ),
    (
        "kodcode",
        KODCODE,
        PytestReward,
        "solve",
        [
            (KODCODE_RIGHT, 1.0),
            (KODCODE_WRONG, 0.0),
            (KODCODE_RIGHT.replace("intervals.sort()", "intervals = sorted(intervals)"), 6 / 7),
        ],
    ),
    ("apps", APPS, CallReward, "solve", [(APPS_RIGHT, 1.0), (APPS_HALF, 0.5), ("x = 1\n", 0.0)]),
    ("lcb-functional", LCB_FUNCTIONAL, CallReward, "solve", [(LCB_RIGHT, 1.0), (LCB_WRONG, 0.0)]),
    (
        "open-r1",
        OPENR1,
        StdinStdoutReward,
        "solve",
        [(OPENR1_RIGHT, 1.0), (OPENR1_HALF, 0.5), ("print(0)\n", 0.0)],
    ),
    (
        "lcb-stdin",
        LCB_STDIN,
        StdinStdoutReward,
        "solve",
        [(LCB_STDIN_RIGHT, 1.0), (LCB_STDIN_SHORT, 0.0)],
    ),
]


@pytest.mark.parametrize(
    ("name", "row", "kind", "entry", "graded"), CASES, ids=[c[0] for c in CASES]
)
def test_native_rows_grade_right_wrong_and_partial(
    client: CollimateClient, name: str, row: Any, kind: type, entry: str, graded: list[Any]
) -> None:
    for shape in (row, json.dumps(row)):  # the row itself, and a JSON string of it
        spec = reward_spec_from_ground_truth(shape, entry)
        assert type(spec) is kind
        for candidate, reward in graded:
            result = grade(client, TEMPLATE, candidate, spec)
            assert result.reward == pytest.approx(reward), (name, candidate, result.detail)
            assert not result.infra_error


def test_every_format_in_one_pack(client: CollimateClient) -> None:
    """One exec grades candidates of every format, each with its own spec
    (a pack across prompts): the same rewards as alone."""
    items, want = [], []
    for _name, row, _kind, entry, graded in CASES:
        spec = reward_spec_from_ground_truth(row, entry)
        assert isinstance(spec, GuestReward)
        for candidate, reward in graded:
            ctx = candidate_context(candidate, secrets.token_hex(12), 30)
            items.append(PackItem(spec, ctx, candidate, fresh_seed()))
            want.append(reward)
    shipment = ship_pack(secrets.token_hex(12), items)
    answer = client.exec_once(
        TEMPLATE, code=shipment.code, files=shipment.files, timeout_seconds=120
    )
    got = []
    for item in items:
        frames = read_frames(answer["stdout"], item.ctx.nonce)
        got.append(item.spec.outcome_from_frames(frames, answer["stdout"], 0))
    assert [o.reward for o in got] == pytest.approx(want)
    assert not any(o.verdict == "infra_error" for o in got)


@pytest.mark.parametrize(
    ("row", "entry"),
    [
        ({**MBPP, "scoring": "all"}, "solve"),
        ({**APPS, "scoring": "all"}, "solve"),
        ({**OPENR1, "scoring": "all"}, "solve"),
        ({"kind": "assert", "tests": MBPP["test_list"], "scoring": "all"}, "solve"),
    ],
)
def test_scoring_all_gives_one_or_zero(client: CollimateClient, row: Any, entry: str) -> None:
    spec = reward_spec_from_ground_truth(row, entry)
    half = {AssertReward: MBPP_HALF, CallReward: APPS_HALF, StdinStdoutReward: OPENR1_HALF}[
        type(spec)
    ]
    right = {AssertReward: MBPP_RIGHT, CallReward: APPS_RIGHT, StdinStdoutReward: OPENR1_RIGHT}[
        type(spec)
    ]
    partial = grade(client, TEMPLATE, half, spec)
    assert partial.reward == 0.0 and 0.0 < partial.detail["fraction"] < 1.0
    assert grade(client, TEMPLATE, right, spec).reward == 1.0


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"test_list": "assert f(1) == 1"}, "tests must be a non-empty list"),
        ({"test_list": ["assert f(1) =="]}, "test #0 does not compile"),
        ({"kind": "assert", "check": "x = 1"}, "must define check"),
        ({"test": "from solution import f\n"}, "defines no test_"),
        ({"fn_name": "f", "inputs": [[1]], "outputs": [1, 2]}, "1 inputs but 2 outputs"),
        ({"fn_name": "f", "inputs": [1], "outputs": [1]}, "an APPS input is the list of arguments"),
        ([{"input": "[1", "output": "1", "testtype": "functional"}], "input line 1 is not JSON"),
        ({"language": "cpp", "test_cases": [{"input": ""}]}, "must be an object with input"),
        ({"official_tests": [{"input": "1", "output": "1"}], "input_mode": "file"}, "input_mode"),
        ({"language": "python", "test_cases": [{"input": 1, "output": "1"}]}, "must be strings"),
        ({"test_list": ["assert 1"], "scoring": "most"}, "scoring must be one of"),
        ({"kind": "assert"}, "needs assert statements"),
        ("not json {", "not JSON"),
    ],
)
def test_a_malformed_row_names_what_is_wrong(row: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        reward_spec_from_ground_truth(row)


def test_what_crosses_between_the_tests_and_the_candidate(client: CollimateClient) -> None:
    """Tests run in the grader, the candidate's code in its own process:
    its own exception classes, objects it returns (attributes, methods,
    iteration) and generators work from the tests; a value that cannot
    cross (a lambda the test defines) fails that test only, and says why."""
    row = {
        "test": (
            "import pytest\nfrom solution import Tree, parse, InvalidInput, apply\n\n"
            "def test_own_exception():\n"
            "    with pytest.raises(InvalidInput):\n        parse('')\n\n"
            "def test_builtin_base_of_own_exception():\n"
            "    with pytest.raises(ValueError):\n        parse('')\n\n"
            "def test_objects_and_iteration():\n"
            "    t = Tree(1, [Tree(2, []), Tree(3, [])])\n"
            "    assert t.value == 1 and [c.value for c in t.children] == [2, 3]\n"
            "    assert list(t.walk()) == [1, 2, 3] and len(t) == 3\n\n"
            "def test_a_lambda_cannot_cross():\n"
            "    assert apply(lambda x: x + 1, 2) == 3\n"
        )
    }
    candidate = (
        "class InvalidInput(ValueError):\n    pass\n\n"
        "def parse(text):\n    if not text:\n        raise InvalidInput('empty')\n"
        "    return text\n\n"
        "class Tree:\n"
        "    def __init__(self, value, children):\n"
        "        self.value, self.children = value, children\n"
        "    def walk(self):\n        yield self.value\n"
        "        for c in self.children:\n            yield from c.walk()\n"
        "    def __len__(self):\n        return len(list(self.walk()))\n\n"
        "def apply(f, x):\n    return f(x)\n"
    )
    result = grade(client, TEMPLATE, candidate, reward_spec_from_ground_truth(row))
    assert result.reward == pytest.approx(3 / 4), result.detail
    (failed,) = result.detail["failed"]
    assert failed["index"] == 3 and "cannot cross" in failed["message"]
