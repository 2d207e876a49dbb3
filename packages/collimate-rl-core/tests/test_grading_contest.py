"""``ContestReward`` through ``grade`` and ``grade_batch``, on a real local
backend: verdicts and detail, a group judged in one request, a training
step mixing languages and Python graders, infra errors kept apart from
rewards, and what a client that cannot judge says."""

from __future__ import annotations

import asyncio

import pytest

from collimate_rl import (
    AsyncCollimateClient,
    CollimateClient,
    CollimateError,
    ContestReward,
    GatewayClient,
    UnitTestReward,
    grade,
    grade_async,
    grade_batch,
)
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.rewards.rows import hub_ground_truth, row_task
from collimate_rl.testing.fixtures import module_backend
from collimate_rl.testing.programs import CPP, JAVA, PYTHON_SUM, need

TESTS = [(f"{i} {3 * i}\n", f"{4 * i}\n") for i in range(10)]


backend, client = module_backend(timeout=600)


def test_grade_reads_the_judges_verdicts(client: CollimateClient) -> None:
    need("cpp")
    spec = ContestReward(TESTS, language="cpp", time_limit=1)
    right = grade(client, "py", CPP["right"], spec)
    assert (right.reward, right.verdict, right.infra_error) == (1.0, "passed", False)
    assert right.detail["passed"] == right.detail["total"] == 10
    wrong = grade(client, "py", CPP["wrong"], spec)
    assert wrong.reward == pytest.approx(0.1) and wrong.verdict == "failed"
    assert wrong.detail["failed"][0]["reason"] == "wrong_answer"
    assert "1/10 tests passed" in wrong.explain()
    broken = grade(client, "py", CPP["compile_error"], spec)
    assert broken.reward == 0.0 and "compile_error" in broken.detail["load_error"]


def test_all_or_nothing_stops_at_the_first_failed_test(client: CollimateClient) -> None:
    # echoes its input, but loops on 1 and answers 2 wrong
    source = "n = int(input())\nwhile n == 1:\n    pass\nprint(-1 if n == 2 else n)\n"
    tests = [{"input": f"{i}\n", "output": f"{i}\n"} for i in range(4)]
    problems = [
        {"language": "python", "tests": tests, "time_limit": 0.5, "scoring": scoring}
        for scoring in ("all", "fraction")
    ]
    candidates = [
        {"problem": 0, "source": source},
        {"problem": 1, "source": source},
        {"problem": 0, "source": "print(-1)\n"},
        {"problem": 0, "source": "print(int(input()))\n"},
    ]
    stopped, every, wrong, right = client.judge(problems, candidates)["results"]
    assert [t["verdict"] for t in stopped["tests"]] == [
        "accepted", "time_limit", "skipped", "skipped",
    ]  # fmt: skip
    assert (stopped["reward"], stopped["verdict"], stopped["passed"]) == (0.0, "time_limit", 1)
    assert [t["verdict"] for t in every["tests"]] == [
        "accepted", "time_limit", "wrong_answer", "accepted",
    ]  # fmt: skip
    assert every["reward"] == 0.5
    assert [t["verdict"] for t in wrong["tests"]] == ["wrong_answer"] + ["skipped"] * 3
    assert (right["reward"], right["passed"]) == (1.0, 4)


def test_a_group_goes_in_one_judge_request_compiled_once(client: CollimateClient) -> None:
    need("cpp")
    spec = ContestReward(TESTS, language="cpp", time_limit=1)
    source = CPP["right"] + "\n// grade_batch group\n"
    before = client.health()["compile_cache"]
    results = grade_batch(client, "py", [source] * 16 + [CPP["wrong"]], spec)
    assert [r.reward for r in results] == [1.0] * 16 + [pytest.approx(0.1)]
    assert [r.index for r in results] == list(range(17))
    after = client.health()["compile_cache"]
    assert after["compiles"] - before["compiles"] <= 2  # the new source, and the wrong one once


def test_a_step_mixing_languages_and_python_graders(client: CollimateClient) -> None:
    need("cpp")
    need("java")
    cpp = ContestReward(TESTS, language="cpp")
    java = ContestReward(TESTS, language="java", time_limit=3)
    py = UnitTestReward([{"input": [2, 3], "output": 5}], entry="add")
    candidates = [CPP["right"], JAVA["right"], "def add(a, b):\n    return a + b\n",
                  JAVA["wrong"], "def add(a, b):\n    return a - b\n", PYTHON_SUM]  # fmt: skip
    py_sum = ContestReward(TESTS, language="python")
    results = grade_batch(client, "py", candidates, [cpp, java, py, java, py, py_sum])
    assert [r.reward for r in results] == [1.0, 1.0, 1.0, pytest.approx(0.1), 0.0, 1.0]


def test_async_grade(backend: LocalCollimateBackend) -> None:
    need("cpp")

    async def main() -> float:
        async with AsyncCollimateClient(backend.base_url, timeout=600) as c:
            spec = ContestReward(TESTS, language="cpp")
            return (await grade_async(c, "py", CPP["right"], spec)).reward

    assert asyncio.run(main()) == 1.0


def test_a_language_the_host_lacks_is_an_infra_error_not_a_zero(client: CollimateClient) -> None:
    # (no backend runs COBOL; kotlin, named here before, runs now)
    spec = ContestReward(TESTS, language="cobol")
    with pytest.raises(CollimateError) as caught:
        grade(client, "py", "DISPLAY 'HI'.", spec)
    assert "cobol" in str(caught.value)
    (flagged,) = grade_batch(client, "py", ["DISPLAY 'HI'."], spec, on_infra_error="zero")
    assert flagged.infra_error and flagged.verdict == "infra_error" and flagged.reward == 0.0


def test_the_gateway_wire_judges_for_a_key(backend: LocalCollimateBackend) -> None:
    """The same grade through the local backend's gateway wire (a Bearer
    key); without a key the gateway wire refuses it."""
    need("cpp")
    spec = ContestReward(TESTS, language="cpp")
    key = backend.generated_keys["demo"] if backend.generated_keys else None
    assert key is not None
    with GatewayClient(key, backend.base_url, timeout=600) as gateway:
        assert grade(gateway, "py", CPP["right"], spec).reward == 1.0
    with GatewayClient("col_demo_" + "x" * 24, backend.base_url) as stranger:
        with pytest.raises(CollimateError) as refused:
            grade(stranger, "py", CPP["right"], spec)
        assert refused.value.status == 401


def test_a_client_that_cannot_judge_says_so() -> None:
    class Plain:
        """A client of the seed's contract: execs only."""

        def exec_once(self, *_a: object, **_k: object) -> dict[str, object]:
            raise AssertionError("a judged reward is never an exec")

    with pytest.raises(CollimateError, match="cannot judge"):
        grade(Plain(), "py", CPP["right"], ContestReward(TESTS))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"tests": []}, "non-empty"),
        ({"tests": [("1", 2)]}, "strings"),
        ({"time_limit": 0}, "time_limit"),
        ({"memory_limit_mb": 1 << 20}, "memory_limit_mb"),
        ({"compare": "fuzzy"}, "compare"),
        ({"scoring": "best"}, "scoring"),
        ({"checker": {"source": "x", "protocol": "magic"}}, "protocol"),
    ],
)
def test_a_bad_spec_is_refused_when_made(kwargs: dict[str, object], says: str) -> None:
    args: dict[str, object] = {"tests": TESTS, **kwargs}
    with pytest.raises(ValueError, match=says):
        ContestReward(**args)  # type: ignore[arg-type]


def test_build_says_the_server_judges() -> None:
    with pytest.raises(TypeError, match="judged by the server"):
        ContestReward(TESTS).build("/tmp/x")


# -- dataset rows, as `datasets` loads them --------------------------------------

CPP_FENCED = "Here is my solution:\n```cpp\n" + CPP["right"] + "\n```\n"
#: open-r1's Codeforces checker form: checker input correct_output solution_output
OPENR1_CHECKER = """import sys
inp, correct, got = (open(p).read().split() for p in sys.argv[1:4])
print(1 if got == correct else 0)
"""


def _openr1_row(language: str) -> dict[str, object]:
    return {
        "prompt": "Add two numbers.",
        "verification_info": {
            "language": language,
            "test_cases": [{"input": i, "output": o, "type": "stdin_stdout"} for i, o in TESTS],
        },
    }


def _codeforces_row(checker: str | None) -> dict[str, object]:
    return {
        "id": "1A",
        "prompt": "Add two numbers.",
        "official_tests": [{"input": i, "output": o} for i, o in TESTS],
        "generated_checker": checker,
        "time_limit": 1.0,
        "memory_limit": 256,
        "language": "cpp",
        "input_mode": "stdio",
    }


def test_an_openr1_row_in_cpp(client: CollimateClient) -> None:
    need("cpp")
    row = _openr1_row("cpp")
    task = row_task(hub_ground_truth(row), row=row)
    assert isinstance(task.spec, ContestReward) and task.spec.compare == "lines"
    right = grade(client, "py", task.program(CPP_FENCED), task.spec)
    assert right.reward == 1.0, right.explain()
    wrong = grade(client, "py", task.program(CPP["wrong"]), task.spec)
    assert wrong.reward == pytest.approx(0.1)


@pytest.mark.parametrize("checker", [None, OPENR1_CHECKER])
def test_a_codeforces_row_with_and_without_its_checker(
    client: CollimateClient, checker: str | None
) -> None:
    need("cpp")
    row = _codeforces_row(checker)
    task = row_task(hub_ground_truth(row), row=row)
    spec = task.spec
    assert isinstance(spec, ContestReward)
    assert (spec.time_limit, spec.memory_limit_mb) == (1.0, 256)
    assert (spec.checker is not None) == (checker is not None)
    programs = [task.program(CPP_FENCED), task.program(CPP["wrong"])]
    rewards = [r.reward for r in grade_batch(client, "py", programs, spec)]
    assert rewards == [1.0, pytest.approx(0.1)]


def _codecontests_row(**extra: object) -> dict[str, object]:
    """A CodeContests row as ``datasets`` loads it (its columns that matter
    here, and some that do not)."""
    pairs = [(f"{i} {3 * i}\n", f"{4 * i}\n") for i in range(6)]
    return {
        "name": "1000_A. A+B",
        "description": "Print a + b.",
        "public_tests": {"input": [pairs[0][0]], "output": [pairs[0][1]]},
        "private_tests": {
            "input": [p[0] for p in pairs[1:4]],
            "output": [p[1] for p in pairs[1:4]],
        },
        "generated_tests": {
            "input": [p[0] for p in pairs[4:]],
            "output": [p[1] for p in pairs[4:]],
        },
        "source": 2,
        "difficulty": 7,
        "solutions": {"language": [2], "solution": ["..."]},
        "time_limit": {"seconds": 2, "nanos": 500000000},
        "memory_limit_bytes": 256000000,
        "input_file": "",
        "output_file": "",
        **extra,
    }


def test_a_codecontests_row_judges_each_completion_in_its_own_language(
    client: CollimateClient,
) -> None:
    """CodeContests' problems take any language: a row without a language
    column is judged in the one each completion's fence names, or its code
    gives away; all its tests (public, private, generated) count."""
    need("cpp")
    need("java")
    row = _codecontests_row()
    task = row_task(hub_ground_truth(row), row=row)
    assert isinstance(task.spec, ContestReward)
    assert (task.spec.language, len(task.spec.tests)) == ("auto", 6)
    assert (task.spec.time_limit, task.spec.memory_limit_mb) == (2.5, 244)
    completions = [
        f"Here:\n```cpp\n{CPP['right']}\n```\n",
        f"```python\n{PYTHON_SUM}```",
        f"<think>```cpp\nint main(){{}}\n```</think>\n```java\n{JAVA['right']}\n```",
        f"```cpp\n{CPP['wrong']}\n```",
        PYTHON_SUM,  # no fence, no tell: Python
        f"```\n{CPP['right']}\n```",  # untagged: #include gives C++ away
    ]
    results = grade_batch(client, "py", [task.program(c) for c in completions], task.spec)
    assert [r.reward for r in results] == [1.0, 1.0, 1.0, pytest.approx(1 / 6), 1.0, 1.0], [
        r.explain() for r in results
    ]
    assert not any(r.infra_error for r in results)


def test_a_codecontests_row_with_a_language_column_and_a_file_problem() -> None:
    row = _codecontests_row(language="cpp")
    spec = row_task(hub_ground_truth(row), row=row).spec
    assert isinstance(spec, ContestReward) and spec.language == "cpp"
    # a fenced block in another language is not what a C++ row judges
    assert spec.source_of(f"```python\nx\n```\n```cpp\n{CPP['right']}\n```") == CPP["right"] + "\n"
    with pytest.raises(ValueError, match="input_file"):
        row_task(hub_ground_truth(_codecontests_row(input_file="input.txt")), row={})


def test_an_auto_problem_needs_each_candidates_language(client: CollimateClient) -> None:
    problem = {"language": "auto", "tests": [{"input": "1 2\n", "output": "3\n"}]}
    with pytest.raises(CollimateError, match="its problem's language is auto"):
        client.judge([problem], [{"problem": 0, "source": PYTHON_SUM}])
    answer = client.judge([problem], [{"problem": 0, "source": PYTHON_SUM, "language": "python"}])
    assert answer["results"][0]["reward"] == 1.0
