"""``POST /v1/judge`` on a real local backend: every verdict in every
language, partial credit, the comparisons, checkers (testlib's protocol
and open-r1's, and a checker that fails: an infra error, never a 0.0),
one compile for a group of identical candidates, and bad bodies."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from collimate_rl import CollimateClient
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.local_backend.judging import compare_output
from collimate_rl.testing.fixtures import module_backend
from collimate_rl.testing.programs import PROGRAMS, need

TESTS = [{"input": f"{i} {3 * i}\n", "output": f"{4 * i}\n"} for i in range(10)]
#: Right on the first half of the tests only (partial credit: 0.5).
CPP_HALF = (
    "#include <bits/stdc++.h>\nint main(){ long long a,b; std::cin>>a>>b;"
    ' std::cout << (a < 5 ? a + b : a - b) << "\\n"; }'
)
#: A testlib-protocol checker (argv: input output answer) in C++: accepts
#: any pair of numbers summing to the answer (many right outputs).
CHECKER_TESTLIB = r"""
#include <bits/stdc++.h>
int main(int argc, char** argv) {
    std::ifstream out(argv[2]), ans(argv[3]);
    long long x, y, want;
    if (!(ans >> want)) return 3;
    if (!(out >> x >> y)) return 2;
    return x + y == want ? 0 : 1;
}
"""
#: Right for the checker, wrong for a plain comparison.
CPP_SPLIT = (
    "#include <bits/stdc++.h>\nint main(){ long long a,b; std::cin>>a>>b;"
    ' std::cout << a << " " << b << "\\n"; }'
)
#: Two numbers summing to the answer on the first half of the tests only.
CPP_SPLIT_HALF = (
    "#include <bits/stdc++.h>\nint main(){ long long a,b; std::cin>>a>>b;"
    ' std::cout << a << " " << (a < 5 ? b : a) << "\\n"; }'
)
CHECKER_OPENR1 = """import sys
inp, correct, got = (open(p).read().split() for p in sys.argv[1:4])
print(1 if len(got) == 2 and int(got[0]) + int(got[1]) == int(correct[0]) else 0)
"""


backend, client = module_backend(timeout=600)


def judge(client: CollimateClient, sources: list[str], **problem: Any) -> list[dict[str, Any]]:
    problem = {"language": "cpp", "tests": TESTS, "time_limit": 1, **problem}
    answer = client.judge([problem], [{"problem": 0, "source": s} for s in sources])
    return list(answer["results"])


@pytest.mark.parametrize("language", list(PROGRAMS))
def test_every_verdict(client: CollimateClient, language: str) -> None:
    need(language)
    programs = PROGRAMS[language]
    names = ["right", "wrong", "runtime_error", "loop", "memory", "flood"]
    if programs["compile_error"]:
        names.append("compile_error")
    problem = {"language": language, "tests": TESTS[:3], "time_limit": 1, "memory_limit_mb": 256}
    # The programs that run out of a limit do so on every test alike: one
    # test is proof enough (each costs its limit in CPU). The memory hog is
    # judged with time to spare: each page it touches costs kernel CPU,
    # which a loaded machine (shadow paging in a VM) can stretch past one
    # second before 256 MB is resident; its verdict must be the memory it
    # used, not that CPU.
    one = {**problem, "tests": TESTS[:1]}
    roomy = {**one, "time_limit": 10}
    where = {"loop": 1, "flood": 1, "memory": 2}
    answer = client.judge(
        [problem, one, roomy],
        [{"problem": where.get(n, 0), "source": programs[n]} for n in names],
    )
    results = list(answer["results"])
    got = {n: (r["reward"], r["verdict"]) for n, r in zip(names, results, strict=True)}
    assert got["right"] == (1.0, "accepted"), results[0]
    assert got["wrong"] == (pytest.approx(1 / 3), "wrong_answer")  # 0 + 0 == 0 * 0
    assert got["runtime_error"] == (0.0, "runtime_error")
    assert got["loop"] == (0.0, "time_limit")
    assert got["memory"] == (0.0, "memory_limit")
    assert got["flood"] == (0.0, "output_limit")
    if "compile_error" in got:
        assert got["compile_error"] == (0.0, "compile_error")
        assert results[names.index("compile_error")]["compile"]["output"]


def test_a_time_limit_says_what_ran_out(client: CollimateClient) -> None:
    """A loop spends its CPU time, a sleeper its idle time: both are the
    program's ``time_limit``, and each test's detail says which ended it."""
    need("python")
    loop, sleeper = "while True: pass\n", "import time\ntime.sleep(100)\n"
    results = judge(client, [loop, sleeper], language="python", tests=TESTS[:1])
    for result, ended_by in zip(results, ("cpu", "idle"), strict=True):
        assert (result["reward"], result["verdict"]) == (0.0, "time_limit"), result
        test = result["tests"][0]
        assert test["ended_by"] == ended_by, test
        assert (test["idle"] > 0.9) == (ended_by == "idle"), test


def test_partial_credit_and_all_or_nothing(client: CollimateClient) -> None:
    need("cpp")
    (half,) = judge(client, [CPP_HALF])
    assert (half["reward"], half["passed"], half["total"]) == (0.5, 5, 10)
    assert [t["verdict"] for t in half["tests"]][4:6] == ["accepted", "wrong_answer"]
    (half,) = judge(client, [CPP_HALF], scoring="all")
    assert half["reward"] == 0.0


@pytest.mark.parametrize(
    ("got", "expected", "how", "same"),
    [
        (b"1 2\n3\n", b"1  2\n3", "tokens", True),
        (b"1 2\n3\n", b"1 2 3", "lines", False),
        (b"1 2  \n3\n\n\n", b"1 2\n3\n", "lines", True),
        (b"1 2\n", b"1 2", "exact", False),
        (b"0.3333334 1e9", b"0.3333333 1000000000.5", "float", True),
        (b"0.334", b"0.333", "float", False),
        (b"nan", b"nan", "float", True),
        (b"inf", b"1e308", "float", False),
        (b"1 2", b"1 2 3", "float", False),
    ],
)
def test_comparisons(got: bytes, expected: bytes, how: str, same: bool) -> None:
    assert compare_output(got, expected, how, 1e-6) is same


def test_a_testlib_checker_accepts_any_right_answer(client: CollimateClient) -> None:
    need("cpp")
    checker = {"protocol": "testlib", "language": "cpp", "source": CHECKER_TESTLIB}
    right, plain_wrong = judge(client, [CPP_SPLIT, PROGRAMS["cpp"]["wrong"]], checker=checker)
    assert right["reward"] == 1.0, right
    assert plain_wrong["reward"] == 0.0  # one number: the checker wants two
    (unchecked,) = judge(client, [CPP_SPLIT])
    assert unchecked["reward"] == 0.0  # without the checker: "0 0" is not "0"


def test_an_openr1_python_checker(client: CollimateClient) -> None:
    need("cpp")
    checker = {"protocol": "openr1", "language": "python", "source": CHECKER_OPENR1}
    right, half = judge(client, [CPP_SPLIT, CPP_SPLIT_HALF], checker=checker)
    assert right["reward"] == 1.0
    assert half["reward"] == 0.5


@pytest.mark.parametrize(
    "source",
    [
        "int main(){ return 3; }",  # testlib's FAIL
        "int main(){ int* p = nullptr; return *p; }",  # crashes
        "int main(){ syntax error }",  # does not compile
    ],
)
def test_a_checker_that_fails_is_an_infra_error(client: CollimateClient, source: str) -> None:
    need("cpp")
    checker = {"protocol": "testlib", "language": "cpp", "source": source}
    (result,) = judge(client, [PROGRAMS["cpp"]["right"]], checker=checker)
    assert "infra_error" in result and "reward" not in result, result


#: A testlib checker that accepts numbers summing to the answer, and
#: aborts on a word (where a sound one would say 2, presentation error).
CHECKER_FRAGILE = r"""
#include <bits/stdc++.h>
int main(int argc, char** argv) {
    std::ifstream out(argv[2]), ans(argv[3]);
    long long want, sum = 0;
    std::string w;
    if (!(ans >> want)) return 3;
    while (out >> w) {
        if (!isdigit((unsigned char)w[0])) abort();
        sum += std::stoll(w);
    }
    return sum == want ? 0 : 1;
}
"""
#: Two words, not numbers: CHECKER_OPENR1's int() fails on them.
CPP_WORDS = '#include <cstdio>\nint main(){ puts("x y"); }'


@pytest.mark.parametrize("protocol", ["openr1", "testlib"])
def test_a_checker_broken_by_the_programs_output_is_the_programs_wrong_answer(
    client: CollimateClient, protocol: str
) -> None:
    """A checker that crashes on what the program printed, but accepts the
    expected answer, was broken by that output: the program's 0.0, never an
    infra error (a policy would learn to print what crashes checkers)."""
    need("cpp")
    if protocol == "openr1":
        checker = {"protocol": "openr1", "language": "python", "source": CHECKER_OPENR1}
    else:
        checker = {"protocol": "testlib", "language": "cpp", "source": CHECKER_FRAGILE}
    words, right = judge(client, [CPP_WORDS, CPP_SPLIT], checker=checker)
    assert (words.get("reward"), words.get("verdict")) == (0.0, "wrong_answer"), words
    assert right["reward"] == 1.0, right


def test_a_go_program_without_a_package_clause_is_its_compile_error(
    client: CollimateClient,
) -> None:
    """The candidate's source decides whether Go has a package to build:
    its failure, never the judge's."""
    need("go")
    tests = "func main() {\n}\n"
    problem = {"language": "go", "program": {"tests": tests, "prompt": None}}
    source = "func three() int { return 3 }\n"
    (result,) = client.judge([problem], [{"problem": 0, "source": source}])["results"]
    assert (result.get("reward"), result.get("verdict")) == (0.0, "compile_error"), result


def test_test_programs_without_a_main_are_the_judges_failure(client: CollimateClient) -> None:
    """Tests with no ``main`` to guard cannot tell an early exit from a
    pass: an infra error (the request's), never a reward."""
    need("cpp")
    problem = {"language": "cpp", "program": {"tests": "// nothing", "prompt": None}}
    answer = client.judge([problem], [{"problem": 0, "source": "int f() { return 1; }"}])
    assert "no int main()" in answer["results"][0]["infra_error"]


def test_one_compile_for_a_group_of_identical_candidates(client: CollimateClient) -> None:
    """16 identical candidates, 10 tests each, all 16 sent: one compile."""
    need("cpp")
    source = PROGRAMS["cpp"]["right"] + "\n// group of 16\n"
    before = client.health()["compile_cache"]
    results = judge(client, [source] * 16)
    assert [r["reward"] for r in results] == [1.0] * 16
    after = client.health()["compile_cache"]
    assert after["compiles"] - before["compiles"] == 1
    assert (after["joined"] + after["hits"]) - (before["joined"] + before["hits"]) == 15
    judge(client, [source] * 16)
    again = client.health()["compile_cache"]
    assert again["compiles"] == after["compiles"], "a rerun compiles nothing"


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({}, "problems must be"),
        ({"problems": [], "candidates": []}, "problems must be"),
        ({"problems": [{"language": "cobol", "tests": TESTS}], "candidates": [{}]}, "cobol"),
        ({"problems": [{"language": "cpp", "tests": []}], "candidates": [{}]}, "tests"),
        (
            {"problems": [{"language": "cpp", "tests": TESTS, "compare": "fuzzy"}],
             "candidates": [{"source": ""}]},
            "compare",
        ),
        (
            {"problems": [{"language": "cpp", "tests": TESTS, "time_limit": 0}],
             "candidates": [{"source": ""}]},
            "time_limit",
        ),
        (
            {"problems": [{"language": "cpp", "tests": TESTS}],
             "candidates": [{"problem": 1, "source": ""}]},
            "index problems",
        ),
        ({"problems": [{"language": "cpp", "tests": TESTS}], "candidates": [{"source": 1}]},
         "source"),
        ({"problems": [], "candidates": [], "extra": 1}, "unknown field"),
        # test programs (MultiPL-E and kin)
        ({"problems": [{"language": "cpp", "program": {"tests": "int main(){}"}, "tests": TESTS}],
          "candidates": [{"source": ""}]}, "no tests or checker"),
        ({"problems": [{"language": "python", "program": {"tests": "assert 1"}}],
          "candidates": [{"source": ""}]}, "test programs run in"),
        ({"problems": [{"language": "cpp", "program": {"tests": " "}}],
          "candidates": [{"source": ""}]}, "program.tests"),
        ({"problems": [{"language": "cpp", "program": {"tests": "x", "typecheck": "yes"}}],
          "candidates": [{"source": ""}]}, "typecheck"),
        ({"problems": [{"language": "cpp", "program": {"tests": "x", "stdin": ""}}],
          "candidates": [{"source": ""}]}, "unknown field"),
    ],
)  # fmt: skip
def test_a_bad_body_is_a_400_that_says_why(
    backend: LocalCollimateBackend, body: dict[str, Any], says: str
) -> None:
    r = httpx.post(f"{backend.base_url}/v1/judge", json=body, timeout=60)
    assert r.status_code == 400, r.text
    assert says in r.json()["error"]
