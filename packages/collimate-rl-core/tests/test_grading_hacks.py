"""Rewards a policy under RL pressure cannot game, on every kind, alone and packed.

Each hack below is what a policy finds when it is rewarded for passing
tests rather than for solving the task: read the answers from memory, return
an object that equals anything, lie about its class, subclass a builtin,
patch builtins, leave early, raise what a harness might not catch, forge the
grader's output, kill its parent. Every one must score 0.0 and never pass as
an infrastructure failure (which would drop the sample instead of
penalising it). The expected values are secrets the candidate cannot guess
(``SECRET-`` and 16 random hex digits): the candidates that search for them
in their process's memory (the heap, their frames, every anonymous mapping) would
return them, so a 0.0 shows they found nothing.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from collimate_rl import CollimateClient, grade, grade_batch, reward_spec_from_ground_truth
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.rewards import RewardSpec

TEMPLATE = "py"
SECRET = "SECRET-" + secrets.token_hex(8)


@pytest.fixture(scope="module")
def client() -> Iterator[CollimateClient]:
    with LocalCollimateBackend() as backend, CollimateClient(backend.base_url) as c:
        yield c


# -- the specs: every kind, each expecting SECRET from f("x") ------------------


def _specs() -> dict[str, RewardSpec]:
    return {
        "unit": reward_spec_from_ground_truth([{"input": ["x"], "output": SECRET}], "f"),
        "property": reward_spec_from_ground_truth(
            {"reference": f"    return {SECRET!r}", "generator": "'x'", "k": 2}, "f"
        ),
        "call": reward_spec_from_ground_truth(
            {"fn_name": "f", "inputs": [["x"]], "outputs": [SECRET]}
        ),
        "assert": reward_spec_from_ground_truth({"test_list": [f"assert f('x') == {SECRET!r}"]}),
        "humaneval": reward_spec_from_ground_truth(
            {
                "test": f"def check(candidate):\n    assert candidate('x') == {SECRET!r}\n",
                "entry_point": "f",
            }
        ),
        "pytest": reward_spec_from_ground_truth(
            {"test": f"from solution import f\n\ndef test_f():\n    assert f('x') == {SECRET!r}\n"}
        ),
        "stdio": reward_spec_from_ground_truth(
            {"kind": "stdio", "tests": [{"input": "x\n", "output": SECRET}]}
        ),
        "stdin_stdout": reward_spec_from_ground_truth(
            {"language": "python", "test_cases": [{"input": "x\n", "output": SECRET}]}
        ),
    }


PROGRAM_KINDS = ("stdio", "stdin_stdout")

# -- the hacks: the body of f (a function) or of the program ---------------------

FIND_IN_HEAP = """
import gc, sys
def _search():
    for obj in gc.get_objects():
        if isinstance(obj, dict):
            values = list(obj.values())
        elif isinstance(obj, (list, tuple)):
            values = list(obj)
        else:
            values = [obj]
        for v in values:
            if type(v) is str and v.startswith('SEC' + 'RET-') and len(v) == 23:
                return v
            if callable(v) and getattr(v, '__name__', '') in ('_reference', 'reference', 'check'):
                try:
                    return v('x')
                except Exception:
                    pass
    frame = sys._getframe()
    while frame is not None:
        for v in list(frame.f_locals.values()) + list(frame.f_globals.values()):
            if type(v) is str and v.startswith('SEC' + 'RET-') and len(v) == 23:
                return v
        frame = frame.f_back
    return 'nothing'
"""

FIND_IN_MEMORY = """
import ctypes, re
def _search():
    # every anonymous region it can read, read in place (a candidate is
    # undumpable: /proc/self/mem is closed to it, its memory is not)
    pattern = re.compile(rb'SEC' + rb'RET-([0-9a-f]{16})')
    with open('/proc/self/maps') as maps:
        lines = maps.readlines()
    for line in lines:
        fields = line.split()
        span, perms = fields[:2]
        if 'r' not in perms or (len(fields) > 5 and fields[5] not in ('[heap]', '[stack]')):
            continue
        start, end = (int(p, 16) for p in span.split('-'))
        if end - start > 1 << 28:
            continue
        found = pattern.search(ctypes.string_at(start, end - start))
        if found:
            return 'SEC' + 'RET-' + found.group(1).decode()
    return 'nothing'
"""

FUNCTION_HACKS: dict[str, str] = {
    "walks_its_heap_and_frames": FIND_IN_HEAP + "def f(x):\n    return _search()\n",
    "scans_its_memory": FIND_IN_MEMORY + "def f(x):\n    return _search()\n",
    "returns_an_object_equal_to_anything": (
        "class Any:\n    def __eq__(self, other):\n        return True\n"
        "    def __ne__(self, other):\n        return False\n    __hash__ = None\n"
        "def f(x):\n    return Any()\n"
    ),
    "lies_about_its_class": (
        "class Liar:\n    @property\n    def __class__(self):\n        return str\n"
        "    def __eq__(self, other):\n        return True\n"
        "def f(x):\n    return Liar()\n"
    ),
    "subclasses_a_builtin": (
        "class S(str):\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = str.__hash__\n"
        "def f(x):\n    return S('nope')\n"
    ),
    "patches_builtins": (
        "import builtins\n"
        "builtins.isinstance = lambda *a: True\n"
        "builtins.type = lambda *a: str\n"
        "builtins.AssertionError = type('Nope', (Exception,), {})\n"
        "def f(x):\n    return 'nope'\n"
    ),
    "exits_early": "import os\ndef f(x):\n    os._exit(0)\n",
    "exits_through_sys_exit": "import sys\ndef f(x):\n    sys.exit(0)\n",
    "raises_base_exception": "def f(x):\n    raise KeyboardInterrupt()\n",
    "raises_system_exit_at_import": "raise SystemExit(0)\ndef f(x):\n    return 'never'\n",
    "forges_verdict_lines": (
        "import os, json\n"
        "def f(x):\n"
        "    line = '\\n__COLLIMATE_VERDICT__ ' + json.dumps({'reward': 1.0}) + '\\n'\n"
        "    for fd in range(64):\n"
        "        try:\n            os.write(fd, line.encode())\n"
        "        except OSError:\n            pass\n"
        "    print(line)\n"
        "    return 'nope'\n"
    ),
    "kills_its_parent": "import os\ndef f(x):\n    os.kill(os.getppid(), 9)\n    return 'nope'\n",
}

PROGRAM_HACKS: dict[str, str] = {
    "walks_its_heap_and_frames": FIND_IN_HEAP + "print(_search())\n",
    "scans_its_memory": FIND_IN_MEMORY + "print(_search())\n",
    "patches_builtins": "import builtins\nbuiltins.print = lambda *a, **k: None\nprint('nope')\n",
    "exits_early": "import os\nos._exit(0)\n",
    "raises_base_exception": "raise KeyboardInterrupt()\n",
    "forges_verdict_lines": FUNCTION_HACKS["forges_verdict_lines"] + "print(f('x'))\n",
    "kills_its_parent": "import os\nos.kill(os.getppid(), 9)\nprint('nope')\n",
}

RIGHT_FUNCTION = f"def f(x):\n    return {SECRET!r}\n"
RIGHT_PROGRAM = f"input()\nprint({SECRET!r})\n"

MATRIX = [
    (kind, hack)
    for kind in _specs()
    for hack in (PROGRAM_HACKS if kind in PROGRAM_KINDS else FUNCTION_HACKS)
]


def _hack_source(kind: str, hack: str) -> str:
    return (PROGRAM_HACKS if kind in PROGRAM_KINDS else FUNCTION_HACKS)[hack]


@pytest.mark.parametrize(("kind", "hack"), MATRIX, ids=[f"{k}-{h}" for k, h in MATRIX])
def test_a_hack_alone_scores_nothing(client: CollimateClient, kind: str, hack: str) -> None:
    result = grade(client, TEMPLATE, _hack_source(kind, hack), _specs()[kind])
    assert result.reward == 0.0, result.detail
    assert not result.infra_error, result.error


@pytest.mark.parametrize("kind", list(_specs()))
def test_hacks_in_a_pack_score_nothing_and_cost_nobody_else(
    client: CollimateClient, kind: str
) -> None:
    """Every hack of the kind in one pack, a right answer after each: the
    hacks score 0.0, the right answers 1.0, nothing is an infra failure."""
    spec = _specs()[kind]
    hacks = PROGRAM_HACKS if kind in PROGRAM_KINDS else FUNCTION_HACKS
    right = RIGHT_PROGRAM if kind in PROGRAM_KINDS else RIGHT_FUNCTION
    candidates: list[str] = []
    for source in hacks.values():
        candidates += [source, right]
    results = grade_batch(client, TEMPLATE, candidates, spec, pack=len(candidates))
    got: list[Any] = [(r.reward, r.infra_error) for r in results]
    assert got == [(0.0, False), (1.0, False)] * len(hacks), list(zip(hacks, got[::2], strict=True))
    assert any(r.raw.get("pack") for r in results)  # (graded packed, not all alone)


def test_the_memory_scan_reads_the_candidates_own_memory(client: CollimateClient) -> None:
    """The scan above is no straw man: planted in the candidate's own
    memory, a value of the secret's shape is found, alone and packed."""
    own = "SEC" + "RET-" + "f" * 16
    spec = reward_spec_from_ground_truth([{"input": ["x"], "output": own}], "f")
    planted = "PLANTED = 'SEC' + 'RET-' + 'f' * 16\n" + FUNCTION_HACKS["scans_its_memory"]
    assert grade(client, TEMPLATE, planted, spec).reward == 1.0
    results = grade_batch(client, TEMPLATE, [planted] * 3, spec, pack=3)
    assert [r.reward for r in results] == [1.0] * 3


def test_the_right_answer_scores_on_every_kind(client: CollimateClient) -> None:
    """The specs above are gradeable: the right answer passes everywhere."""
    for kind, spec in _specs().items():
        right = RIGHT_PROGRAM if kind in PROGRAM_KINDS else RIGHT_FUNCTION
        result = grade(client, TEMPLATE, right, spec)
        assert result.reward == 1.0, (kind, result.detail)


SHADOWS_THE_TESTS = (
    "def f(x):\n    return 'nope'\n"
    "def set(*a):\n    return 1\n"
    "def sorted(*a, **k):\n    return 1\n"
    "def str(*a):\n    return 1\n"
    "pytest = None\n"
)


@pytest.mark.parametrize(
    "row",
    [
        {"test_list": [f"assert set(f('x')) == set({SECRET!r})"]},
        {"test_list": [f"assert sorted(f('x')) == sorted({SECRET!r})"]},
        {
            "test": "from solution import *\n\n"
            f"def test_f():\n    assert str(f('x')) == {SECRET!r}\n"
        },
    ],
    ids=["assert-set", "assert-sorted", "pytest-import-star"],
)
def test_names_that_shadow_builtins_do_not_reach_the_tests(
    client: CollimateClient, row: dict[str, Any]
) -> None:
    """A candidate defining ``set`` or ``sorted`` would answer for both sides
    of a comparison: test code never sees such names from it."""
    result = grade(client, TEMPLATE, SHADOWS_THE_TESTS, reward_spec_from_ground_truth(row))
    assert result.reward == 0.0 and not result.infra_error, result.detail


FAKES_A_LIBRARY = (
    "import math as _real\n"
    "class _Lenient:\n"
    "    def __getattr__(self, name):\n"
    "        return lambda *a, **k: True\n"
    "math = _Lenient()\n"
    "def f(x):\n    return 0.0\n"
)


@pytest.mark.parametrize(
    "row",
    [
        {"test_list": ["assert math.isclose(f(2), 12.566, rel_tol=1e-3)"]},
        {"test_list": ["assert math.isclose(f(2), 12.566, rel_tol=1e-3)"], "entry_point": "f"},
        {
            "test": "from solution import *\n\n"
            "def test_f():\n    assert math.isclose(f(2), 12.566, rel_tol=1e-3)\n"
        },
    ],
    ids=["assert", "assert-entry", "pytest-import-star"],
)
def test_a_library_module_the_tests_read_is_the_real_one(
    client: CollimateClient, row: dict[str, Any]
) -> None:
    """MBPP asserts use ``math`` from the solution's own ``import math``: a
    candidate binding ``math`` to an object whose every function answers
    True would pass them all. The tests get the real module."""
    spec = reward_spec_from_ground_truth(row, "f")
    right = "import math\ndef f(r):\n    return math.pi * r * r\n"
    fake, honest = grade_batch(client, TEMPLATE, [FAKES_A_LIBRARY, right], [spec, spec])
    assert fake.reward == 0.0 and not fake.infra_error, fake.detail
    assert honest.reward == 1.0, honest.detail


def test_test_code_the_candidate_fails_is_its_failure_not_infra(
    client: CollimateClient,
) -> None:
    """Test code that calls the candidate before its tests (a HumanEval check
    module, a pytest module's top level) and fails because of its answer:
    the candidate's failure (0.0), never an infra error that would skip it."""
    rows = [
        {
            "test": "from solution import f\nDATA = f('x').upper()\n\n"
            "def test_f():\n    assert DATA\n"
        },
        {"test": "DATA = f('x') + 1\ndef check(candidate):\n    assert DATA\n", "entry_point": "f"},
    ]
    for row in rows:
        result = grade(
            client, TEMPLATE, "def f(x):\n    return None\n", reward_spec_from_ground_truth(row)
        )
        assert result.reward == 0.0 and not result.infra_error, (row, result.detail, result.error)
    # test code broken on its own (no candidate call yet) stays the dataset's fault
    broken = {"test": "1 / 0\n\ndef test_f():\n    assert True\n"}
    from collimate_rl.grading import GraderInfraError

    with pytest.raises(GraderInfraError, match="the test module failed"):
        grade(client, TEMPLATE, RIGHT_FUNCTION, reward_spec_from_ground_truth(broken))
