"""MultiPL-E, HumanEval-X and MBXP rows (``prompt + completion + tests``,
pass = the tests ran to their end and the program exited 0) graded on a
real local backend, in every language these datasets cover that we run.
The rows are the datasets' own (``collimate_rl.testing.programs.program_rows``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from collimate_rl import CollimateClient, ProgramReward, grade_batch
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.rewards.rows import hub_ground_truth, row_task
from collimate_rl.testing.programs import need, program_rows

ROWS = program_rows()


def _id(case: dict[str, Any]) -> str:
    row = case["row"]
    return f"{case['dataset']}-{case['language']}-{row.get('task_id') or row.get('name')}"


@pytest.fixture(scope="module")
def client() -> Iterator[CollimateClient]:
    with LocalCollimateBackend() as backend, CollimateClient(backend.base_url, timeout=600) as c:
        yield c


@pytest.mark.parametrize("case", ROWS, ids=_id)
def test_a_row_grades_right_wrong_and_early_exit(
    client: CollimateClient, case: dict[str, Any]
) -> None:
    need(case["language"])
    row = case["row"]
    task = row_task(hub_ground_truth(row), row=row)
    assert isinstance(task.spec, ProgramReward)
    assert task.spec.language == case["language"]
    early = {
        "cpp": "exit(0);",
        "java": "System.exit(0);",
        "javascript": "process.exit(0);",
        "typescript": "(globalThis as any).process.exit(0);",
        "rust": "std::process::exit(0);",
        "perl": "exit 0;",
        "php": "exit(0);",
        "lua": "os.exit(0)",
        "ruby": "exit 0",
    }.get(case["language"])
    candidates = [case["right"], case["wrong"]]
    # (Go's exits are in test_grading_program_hacks (imports); Bash's tests
    # call the function in a subshell, where exit leaves only that: its
    # early exits are in test_backend_languages_scripts)
    if early is not None:
        candidates.append(early + "\n" + case["right"])
    results = grade_batch(
        client, "py", [task.program(c) for c in candidates], [task.spec] * len(candidates)
    )
    rewards = [r.reward for r in results]
    assert rewards == [1.0, 0.0, 0.0][: len(candidates)], [r.explain() for r in results]
    assert not any(r.infra_error for r in results)
    if len(results) == 3:
        assert results[2].detail["verdicts"] == ["wrong_answer"], results[2].detail


def test_the_row_shapes_become_program_rewards() -> None:
    by = {(c["dataset"], c["language"]): c["row"] for c in ROWS}
    multiple = row_task(hub_ground_truth(by["multipl-e", "go"]), row=by["multipl-e", "go"]).spec
    assert isinstance(multiple, ProgramReward)
    assert multiple.stop_tokens == by["multipl-e", "go"]["stop_tokens"] and multiple.typecheck
    mbxp = row_task(hub_ground_truth(by["mbxp", "typescript"]), row=by["mbxp", "typescript"]).spec
    assert isinstance(mbxp, ProgramReward) and mbxp.typecheck is False
    hx_go = by["humaneval-x", "go"]
    spec = row_task(hub_ground_truth(hx_go), row=hx_go).spec
    assert isinstance(spec, ProgramReward) and spec.prompt is not None
    assert spec.prompt.startswith("package main") and "testify/assert" in spec.prompt
    hx_cpp = row_task(hub_ground_truth(by["humaneval-x", "cpp"]), row=by["humaneval-x", "cpp"]).spec
    assert isinstance(hx_cpp, ProgramReward) and "#include<algorithm>" in (hx_cpp.prompt or "")


def test_a_python_row_of_these_datasets_stays_with_the_python_kinds() -> None:
    row = {
        "task_id": "MBPP/1",
        "language": "python",
        "prompt": "def f(x):\n",
        "test": "def check(candidate):\n    assert candidate(1) == 1\n",
        "entry_point": "f",
    }
    assert not isinstance(row_task(hub_ground_truth(row), row=row).spec, ProgramReward)


def test_humaneval_x_rust_rows_say_why_they_are_not_run() -> None:
    row = {"task_id": "Rust/0", "prompt": "fn f() {", "test": "#[cfg(test)]\nmod tests {}\n"}
    with pytest.raises(ValueError, match="cargo"):
        row_task(hub_ground_truth(row), row=row)


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("    return string.size();\n}\nint main() { return 1; }", "    return string.size();"),
        ("```cpp\nlong string_length(std::string string){\n    return string.size();\n}\n```",
         "long string_length(std::string string){\n    return string.size();\n"),
        ("<think>long string_length(</think>    return string.size();\n",
         "    return string.size();\n"),
    ],
)  # fmt: skip
def test_what_is_judged_of_a_completion(completion: str, expected: str) -> None:
    case = next(c for c in ROWS if (c["dataset"], c["language"]) == ("multipl-e", "cpp"))
    spec = row_task(hub_ground_truth(case["row"]), row=case["row"]).spec
    assert isinstance(spec, ProgramReward)
    source = spec.source_of(completion)
    head = case["row"]["prompt"][: case["row"]["prompt"].index("long string_length")]
    if expected.startswith("long"):
        assert source == head + expected
    else:
        assert source == case["row"]["prompt"] + expected


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tests": "", "language": "cpp"}, "test program"),
        ({"tests": "int main(){}", "language": "cobol"}, "not 'cobol'"),
        ({"tests": "int main(){}", "language": "cpp", "stop_tokens": "\n}"}, "stop_tokens"),
        ({"tests": "int main(){}", "language": "cpp", "time_limit": 0}, "time_limit"),
        ({"tests": "int main(){}", "language": "cpp", "memory_limit_mb": 10**6}, "memory_limit"),
    ],
)
def test_bad_arguments_say_what_is_wrong(kwargs: dict[str, Any], message: str) -> None:
    tests = kwargs.pop("tests")
    with pytest.raises(ValueError, match=message):
        ProgramReward(tests, **kwargs)


def test_collimate_grade_takes_these_rows(tmp_path: Path) -> None:
    """``collimate grade`` on a JSONL of MultiPL-E, HumanEval-X and
    MBXP rows (their own columns plus a completion): each row's
    reward, no infra error."""
    import subprocess
    import sys

    cases = [c for c in ROWS if c["language"] in ("cpp", "javascript")]
    need("cpp")
    need("javascript")
    rows = []
    for n, case in enumerate(cases):
        for which, want in (("right", 1.0), ("wrong", 0.0)):
            rows.append({**case["row"], "id": f"{n}-{which}", "completion": case[which],
                         "want": want})  # fmt: skip
    src, out = tmp_path / "rows.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with LocalCollimateBackend() as backend:
        done = subprocess.run(
            [sys.executable, "-m", "collimate_rl", "grade", str(src), "-o", str(out),
             "--url", backend.base_url, "--no-progress"],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    got = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert len(got) == len(rows) == 18
    for row in rows:
        assert got[row["id"]]["reward"] == row["want"], got[row["id"]]
        assert got[row["id"]]["infra_error"] is False


@pytest.mark.parametrize("as_json", [False, True])
def test_a_whole_row_as_the_ground_truth(as_json: bool) -> None:
    """verl's ``ground_truth`` (or any adapter's) may be the whole row, as
    an object or a JSON string: the same reward as from its columns."""
    from collimate_rl.rewards.registry import reward_spec_from_ground_truth

    for case in ROWS:
        row = case["row"]
        truth = json.dumps(row) if as_json else row
        spec = reward_spec_from_ground_truth(truth)
        assert isinstance(spec, ProgramReward), case["row"].get("task_id")
        assert spec.problem() == row_task(hub_ground_truth(row), row=row).spec.problem()


def test_a_docstring_after_the_signature_is_not_the_signature() -> None:
    """HumanEval-X's C++ prompts put their docstring after the ``{`` of the
    function the model writes (CPP/10): the C++ tests are compiled from the
    declarations before it, and a whole function the model writes is found
    by the signature before it."""
    from collimate_rl.rewards.appended_tests import without_trailing_comments

    case = next(c for c in ROWS if c["row"].get("task_id") == "CPP/10")
    prompt = case["row"]["prompt"]
    assert without_trailing_comments(prompt).endswith("string make_palindrome(string str){")
    assert without_trailing_comments("f() {\n  // a\n  /* b\n c */\n") == "f() {"
    spec = row_task(hub_ground_truth(case["row"]), row=case["row"]).spec
    assert isinstance(spec, ProgramReward)
    whole = "```cpp\nstring make_palindrome(string str){\n" + case["right"] + "```"
    source = spec.source_of(whole)
    assert source.count("string make_palindrome(string str)") == 1
    assert "bool is_palindrome(string str)" in source  # the prompt's helper kept


def test_go_imports_are_what_the_code_uses() -> None:
    """An unused import fails a Go compile, and HumanEval-X's harness adds
    the standard packages a generation uses: a Go test program keeps the
    imports its code uses and gains the standard ones it uses unimported."""
    from collimate_rl.local_backend.program_harness.go import _go_imports

    section = '\nimport (\n    "math"\n    "testing"\n    _ "embed"\n)\n'
    code = (
        "func F(s string) int { return len(strings.Fields(s)) }\n"
        "func TestF(t *testing.T) { sort := 1; _ = sort }\n"
        '// math.Sqrt is only in a comment\nvar x = "fmt.Sprint in a string"\n'
    )
    out = _go_imports(section, code)
    assert '"testing"' in out and '_ "embed"' in out and '"strings"' in out
    assert '"math"' not in out and '"fmt"' not in out and '"sort"' not in out


def test_go_compiles_start_from_a_warm_cache(client: CollimateClient) -> None:
    """The packages Go programs import are compiled once, on the host, and
    every Go compile starts from that cache."""
    from collimate_rl.local_backend.go_cache import seed_dir
    from collimate_rl.local_backend.toolchains import find_toolchains

    need("go")
    case = next(c for c in ROWS if (c["dataset"], c["language"]) == ("humaneval-x", "go"))
    task = row_task(hub_ground_truth(case["row"]), row=case["row"])
    (result,) = grade_batch(client, "py", [task.program(case["right"])], [task.spec])
    assert result.reward == 1.0
    go = find_toolchains()["go"]
    assert go.env["COLLIMATE_GO_SEED"] == str(seed_dir(go.compile[0]))  # type: ignore[union-attr,index]
    assert (seed_dir(go.compile[0]) / "READY").is_file()  # type: ignore[union-attr,index]


def test_javascript_tests_may_use_node_globals(client: CollimateClient) -> None:
    """The globals the tests name are locked against the candidate, but
    Node's own ``process`` is left writable for Node (a frozen one breaks
    what Node does at exit)."""
    need("javascript")
    spec = ProgramReward(
        "const assert = require('assert');\nassert.deepEqual(twice(21), 42);\n"
        "process.stdout.write('tests done\\n');\nprocess.exitCode = 0;\n",
        language="javascript",
        prompt="function twice(x) {\n",
    )
    right, wrong = grade_batch(client, "py", ["  return 2 * x;\n}\n", "  return x;\n}\n"], spec)
    assert (right.reward, wrong.reward) == (1.0, 0.0), (right.explain(), wrong.explain())
