"""verl's own sandbox_fusion reward code (from its wheel, see ``conftest.py``)
scoring against the local backend's ``/run_code``, as a verl user gets it
with ``reward.sandbox_fusion.url=http://127.0.0.1:8080/run_code``."""

from __future__ import annotations

import json
import threading
from types import ModuleType

from collimate_rl.local_backend import LocalCollimateBackend

TESTS = json.dumps({"inputs": ["1 2\n", "10 -3\n"], "outputs": ["3\n", "7\n"]})
RIGHT = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
WRONG = "```python\na, b = map(int, input().split())\nprint(a * b)\n```"


def _score(sf: ModuleType, backend: LocalCollimateBackend, completion: str, tests: str) -> tuple:
    return sf.compute_score(
        f"{backend.base_url}/run_code",
        threading.Semaphore(8),
        1024,
        completion,
        tests,
        continuous=True,
    )


def test_a_right_and_a_wrong_solution(
    verl_sandbox_fusion: ModuleType, backend: LocalCollimateBackend
) -> None:
    score, meta = _score(verl_sandbox_fusion, backend, RIGHT, TESTS)
    assert score == 1.0
    assert [m["status"] for m in meta] == ["success", "success"]
    assert all(m["api_status"] == "Success" and m["run_status"] == "Finished" for m in meta)
    score, meta = _score(verl_sandbox_fusion, backend, WRONG, TESTS)
    assert score == 0.0
    assert [m["status"] for m in meta] == ["wrong_answer", "wrong_answer"]


def test_runtime_error_and_timeout_are_classified_as_verl_expects(
    verl_sandbox_fusion: ModuleType, backend: LocalCollimateBackend
) -> None:
    crash = "```python\nraise SystemExit(2)\n```"
    results, meta = verl_sandbox_fusion.check_correctness(
        f"{backend.base_url}/run_code", json.loads(TESTS), crash.strip("`python\n"), timeout=2
    )
    assert results == [-2, -2] and meta[0]["status"] == "runtime_error"
    loop = "while True:\n    pass\n"
    # verl waits compile + run + 10 s for the answer: 5 s runs leave 15 s
    # to spare on a machine a CI run keeps busy (1 s left 11: once too few)
    results, meta = verl_sandbox_fusion.check_correctness(
        f"{backend.base_url}/run_code", {"inputs": [""], "outputs": ["x"]}, loop, timeout=5
    )
    assert results == [-3] and meta[0]["status"] == "timeout"


def test_call_based_tests_through_verls_wrapper(
    verl_sandbox_fusion: ModuleType, backend: LocalCollimateBackend
) -> None:
    """With ``fn_name`` verl wraps the code in its own ``__main__`` harness.
    (Its harness star-imports ``operator``, ``math``, ...: a name like ``add``
    would find ``operator.add`` before ``Solution.add``.)"""
    tests = {"fn_name": "plus", "inputs": ["1\n2", "5\n5"], "outputs": ["3", "10"]}
    right = "class Solution:\n    def plus(self, a, b):\n        return a + b\n"
    results, _ = verl_sandbox_fusion.check_correctness(
        f"{backend.base_url}/run_code", tests, right, timeout=5
    )
    assert results == [True, True]
    results, _ = verl_sandbox_fusion.check_correctness(
        f"{backend.base_url}/run_code", tests, right.replace("a + b", "a - b"), timeout=5
    )
    assert results == [False, False]


CPP_RIGHT = (
    "#include <bits/stdc++.h>\nint main(){ long long a, b; std::cin >> a >> b;"
    ' std::cout << a + b << "\\n"; }'
)


def test_a_right_and_a_wrong_cpp_answer(
    verl_sandbox_fusion: ModuleType, backend: LocalCollimateBackend
) -> None:
    """verl's ``check_correctness(..., language="cpp")``: one ``/run_code``
    per test case, the program compiled once (the server's cache)."""
    results, meta = verl_sandbox_fusion.check_correctness(
        f"{backend.base_url}/run_code", json.loads(TESTS), CPP_RIGHT, timeout=30, language="cpp"
    )
    assert results == [True, True], meta
    assert [m["status"] for m in meta] == ["success", "success"]
    assert all(m["compile_status"] == "Finished" for m in meta)
    wrong = CPP_RIGHT.replace("a + b", "a * b")
    results, meta = verl_sandbox_fusion.check_correctness(
        f"{backend.base_url}/run_code", json.loads(TESTS), wrong, timeout=30, language="cpp"
    )
    assert results == [False, False]
    assert [m["status"] for m in meta] == ["wrong_answer", "wrong_answer"]
    broken = CPP_RIGHT.replace("a + b", "a + c")
    results, meta = verl_sandbox_fusion.check_correctness(
        f"{backend.base_url}/run_code", json.loads(TESTS), broken, timeout=30, language="cpp"
    )
    assert results == [-4, -4] and meta[0]["status"] == "compile_error"


def test_a_language_we_cannot_run_is_verls_sandbox_error(
    verl_sandbox_fusion: ModuleType, backend: LocalCollimateBackend
) -> None:
    results, meta = verl_sandbox_fusion.check_correctness(
        f"{backend.base_url}/run_code",
        json.loads(TESTS),
        "def main : IO Unit := pure ()",
        language="lean",
    )
    assert results == [-1, -1] and meta[0]["status"] == "sandbox_error"
