"""``collimate grade``'s parts without a backend: reading rows, the output's
records and writer, resuming, seeds and the summary."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from collimate_rl import DET_SEED, GradeResult, seed_from_key
from collimate_rl.dataset_grading.results import (
    ExistingOutput,
    OutputMismatchError,
    ResultWriter,
    infra_record,
    invalid_record,
    load_existing,
    plan_resume,
    result_record,
)
from collimate_rl.dataset_grading.rows import InputRow, RowOptions, RowProblem, read_rows
from collimate_rl.dataset_grading.runner import GradeSettings, row_seed, spec_lists_supported
from collimate_rl.dataset_grading.summary import render_summary, summarize

UT = [{"input": [1], "output": 2}, {"input": [2], "output": 4}]
CODE = "def solve(x):\n    return 2 * x\n"


def write_rows(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_code_fields_and_where_the_ground_truth_is(tmp_path: Path) -> None:
    fenced = f"Here it is:\n```python\n{CODE}```\nDone."
    src = write_rows(
        tmp_path / "in.jsonl",
        [
            {"code": CODE, "ground_truth": UT},
            {"completion": fenced, "ground_truth": json.dumps(UT)},  # a JSON string too
            {
                "response": [
                    {"role": "user", "content": "q"},
                    {"role": "assistant", "content": fenced},
                ],
                "reward_spec": {"method": "rule", "ground_truth": UT},
            },  # SkyRL
            {
                "completion": {"role": "assistant", "content": [{"type": "text", "text": fenced}]},
                "reward_model": {"style": "rule", "ground_truth": UT},
            },  # verl
        ],
    )
    read = read_rows(src)
    assert read.problems == []
    assert [r.code for r in read.rows] == [CODE, CODE.strip(), CODE.strip(), CODE.strip()]
    assert [r.id for r in read.rows] == [1, 2, 3, 4]  # no id: the line number
    # the same ground truth and entry make one spec, decoded or not
    assert len({r.spec_key for r in read.rows[::2]}) == 1
    assert set(read.specs) == {r.spec_key for r in read.rows}


def test_named_fields_dotted_paths(tmp_path: Path) -> None:
    src = write_rows(
        tmp_path / "in.jsonl",
        [
            {
                "meta": {"gt": UT, "key": "k1"},
                "out": {"text": f"```\n{CODE}```"},
                "src": "x",
                "uid": 9,
            }
        ],
    )
    opts = RowOptions(
        ground_truth_field="meta.gt",
        completion_field="out.text",
        id_field="meta.key",
        group_field="uid",
    )
    (row,) = read_rows(src, opts).rows
    assert (row.id, row.code, row.group) == ("k1", CODE.strip(), "9")
    src2 = write_rows(tmp_path / "in2.jsonl", [{"src": CODE, "ground_truth": UT}])
    (row2,) = read_rows(src2, RowOptions(code_field="src")).rows
    assert row2.code == CODE


def test_group_keys_in_their_order(tmp_path: Path) -> None:
    src = write_rows(
        tmp_path / "in.jsonl",
        [
            {"code": CODE, "ground_truth": UT, "prompt": "p", "uid": "u", "group": "g"},
            {"code": CODE, "ground_truth": UT, "prompt": "p", "uid": "u"},
            {"code": CODE, "ground_truth": UT, "prompt": "p", "prompt_id": 4},
            {"code": CODE, "ground_truth": UT, "prompt": [{"role": "user", "content": "p"}]},
            {"code": CODE, "ground_truth": UT},
        ],
    )
    groups = [r.group for r in read_rows(src).rows]
    assert groups == ["g", "u", "4", '[{"content":"p","role":"user"}]', None]


def test_every_bad_row_is_named_by_line(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(
        b"\n".join(
            [
                json.dumps({"id": "a", "code": CODE, "ground_truth": UT}).encode(),
                b"",  # blank: skipped, still counted
                b'{"id": "b", "code": ',  # line 3
                b"[1, 2]",  # 4
                json.dumps({"id": "c", "ground_truth": UT}).encode(),  # 5: no code
                json.dumps({"id": "d", "code": CODE}).encode(),  # 6: no ground truth
                json.dumps({"id": "e", "code": CODE, "ground_truth": {"what": 1}}).encode(),  # 7
                json.dumps({"id": "a", "code": CODE, "ground_truth": UT}).encode(),  # 8: dup
                json.dumps({"id": 1.5, "code": CODE, "ground_truth": UT}).encode(),  # 9
                json.dumps({"code": 3, "ground_truth": UT, "data_source": "s"}).encode(),  # 10
                b"\xff\xfe",  # 11
                json.dumps({"id": "f", "code": CODE, "ground_truth": UT}).encode(),  # 12
            ]
        )
        + b"\n"
    )
    read = read_rows(src)
    assert [r.id for r in read.rows] == ["a", "f"]
    problems = {p.line: p for p in read.problems}
    assert sorted(problems) == [3, 4, 5, 6, 7, 8, 9, 10, 11]
    assert "not valid JSON" in problems[3].message
    assert "JSON object" in problems[4].message
    assert "no code" in problems[5].message and problems[5].id == "c"
    assert "no ground truth" in problems[6].message
    assert "no reward kind accepts" in problems[7].message
    assert "duplicate id 'a' (first on line 1)" in problems[8].message
    assert problems[8].id is None  # the id belongs to line 1
    assert "string or an integer" in problems[9].message
    assert "'code' must be a string" in problems[10].message
    assert problems[10].data_source == "s"
    assert "not UTF-8" in problems[11].message
    assert str(problems[3]).startswith("line 3: ")


def test_an_explicit_field_must_be_there(tmp_path: Path) -> None:
    src = write_rows(tmp_path / "in.jsonl", [{"code": CODE, "ground_truth": UT}])
    (p,) = read_rows(src, RowOptions(group_field="prompt_id")).problems
    assert "no group" in p.message and "'prompt_id'" in p.message
    (p,) = read_rows(src, RowOptions(ground_truth_field="answer")).problems
    assert "'answer'" in p.message


def _row(key: str = "1", group: str | None = None, line: int = 1) -> InputRow:
    return InputRow(
        line=line,
        id=key,
        key=json.dumps(key),
        code=CODE,
        ground_truth=UT,
        entry="solve",
        spec_key="s",
        data_source="ds",
        group=group,
        input_sha=f"sha{key}",
    )


def test_seeds_per_mode() -> None:
    assert row_seed(_row("1", "p7"), "crn") == seed_from_key("p7")
    assert row_seed(_row("2", "p7"), "crn") == row_seed(_row("1", "p7"), "crn")
    assert row_seed(_row("1", "p7"), "crn", "epoch2") == seed_from_key("p7", "epoch2")
    assert row_seed(_row("1"), "crn") != row_seed(_row("2"), "crn")  # each its own group
    assert row_seed(_row("1"), "crn") == seed_from_key("row:1")
    assert row_seed(_row("1", "p7"), "vanilla") is None
    assert row_seed(_row("1", "p7"), "deterministic") == DET_SEED


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="seed mode"):
        GradeSettings("py", seed_mode="fresh")
    with pytest.raises(ValueError, match="on_infra_error"):
        GradeSettings("py", on_infra_error="ignore")
    assert isinstance(spec_lists_supported(), bool)


def test_records_never_score_an_infra_error() -> None:
    row = _row()
    ok = GradeResult(reward=0.5, seed="s", seed_ack="verified", detail={"passed": 1, "total": 2})
    rec = result_record(row, ok, "py")
    assert (rec["reward"], rec["verdict"], rec["passed"], rec["total"]) == (0.5, "failed", 1, 2)
    assert rec["input_sha"] == "sha1" and rec["infra_error"] is False
    bad = GradeResult(reward=0.0, infra_error=True, error="CollimateError: boom")
    for rec in (result_record(row, bad, "py"), infra_record(row, bad, "py")):
        assert rec["reward"] is None and rec["infra_error"] is True
        assert rec["verdict"] == "infra_error" and rec["error"] == "CollimateError: boom"


def test_writer_appends_whole_lines_and_can_start_over(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with ResultWriter(out) as w:
        w.write({"id": 1, "verdict": "passed"})
        w.write({"id": 2, "verdict": "passed", "note": "é\n"})
    with ResultWriter(out) as w:  # appends
        w.write({"id": 3, "verdict": "failed"})
    assert [r["id"] for r in load_existing(out).records] == [1, 2, 3]
    with ResultWriter(out, start=[{"id": 9, "verdict": "passed"}]):
        pass
    assert [r["id"] for r in load_existing(out).records] == [9]
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]  # no temporary left
    with pytest.raises(ValueError, match="closed"):
        w.write({"id": 4})


def test_a_torn_last_line_is_dropped_and_garbage_refused(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_bytes(b'{"id": 1, "verdict": "passed"}\n{"id": 2, "verd')
    existing = load_existing(out)
    assert [r["id"] for r in existing.records] == [1] and existing.torn_bytes == 15
    out.write_bytes(b'{"id": 1, "verdict": "passed"}\nnot json\n{"id": 2, "verdict": "x"}\n')
    with pytest.raises(OutputMismatchError, match="line 2 is not JSON"):
        load_existing(out)
    out.write_bytes(b'{"a": 1}\n')
    with pytest.raises(OutputMismatchError, match="not a collimate grade result"):
        load_existing(out)


def _rec(row: InputRow, **kw: Any) -> dict[str, Any]:
    rec = result_record(row, GradeResult(reward=1.0), "py")
    rec.update(kw)
    return rec


def test_resume_plan_keeps_graded_rows_and_retries_flagged_ones() -> None:
    rows = [_row(str(i), line=i) for i in range(1, 6)]
    records = [
        _rec(rows[0]),
        infra_record(rows[1], None, "py"),
        _rec(rows[2]),
        _rec(rows[2]),  # twice (never written so, but tolerated: one kept)
        infra_record(rows[3], None, "py"),
        _rec(rows[3]),  # the flag a later grade superseded
        invalid_record(RowProblem(9, "bad"), "py"),
    ]
    plan = plan_resume(ExistingOutput(records, torn_bytes=0), rows, "py")
    assert plan.done == {rows[0].key, rows[2].key, rows[3].key}
    assert [r["id"] for r in plan.keep] == ["1", "3", "4"]
    assert (plan.infra_retried, plan.invalid_dropped, plan.duplicates) == (1, 1, 2)
    assert plan.rewrite
    clean = plan_resume(ExistingOutput([_rec(rows[0])]), rows, "py")
    assert not clean.rewrite and clean.done == {rows[0].key}
    assert plan_resume(ExistingOutput([], torn_bytes=3), rows, "py").rewrite


def test_resume_refuses_results_of_other_rows() -> None:
    rows = [_row("1"), _row("2")]
    with pytest.raises(OutputMismatchError, match=r"changed since it was graded") as info:
        plan_resume(
            ExistingOutput([_rec(rows[0], input_sha="other")]),
            rows,
            "py",
            output_name="o.jsonl",
            input_name="i.jsonl",
        )
    assert "o.jsonl holds results that do not belong to i.jsonl" in str(info.value)
    assert "--overwrite" in str(info.value)
    with pytest.raises(OutputMismatchError, match="'9' is not a valid row"):
        plan_resume(ExistingOutput([_rec(_row("9"))]), rows, "py")
    with pytest.raises(OutputMismatchError, match="graded on template 'py'"):
        plan_resume(ExistingOutput([_rec(rows[0])]), rows, "dkr-python311")
    many = [_rec(_row(str(i))) for i in range(10, 16)]
    with pytest.raises(OutputMismatchError, match=r"\(and 3 more\)"):
        plan_resume(ExistingOutput(many), rows, "py")


def test_summary_per_data_source() -> None:
    a = [_row(str(i)) for i in range(4)]
    b = [InputRow(**{**_row(str(i)).__dict__, "data_source": None}) for i in range(4, 6)]
    records = [
        _rec(a[0]),
        _rec(a[1], reward=0.5, verdict="failed"),
        infra_record(a[2], None, "py"),
        _rec(b[0], reward=0.0, verdict="failed"),
    ]
    summary = summarize([*a, *b], [RowProblem(7, "bad", data_source="ds")], records)
    ds = summary.by_source["ds"]
    assert (ds.rows, ds.graded, ds.passed, ds.infra_errors, ds.invalid, ds.not_graded) == (
        5,
        2,
        1,
        1,
        1,
        1,
    )
    assert ds.pass_rate == 0.5 and ds.mean_reward == 0.75
    none = summary.by_source["(none)"]
    assert (none.rows, none.graded, none.not_graded, none.pass_rate) == (2, 1, 1, 0.0)
    assert summary.total.rows == 7 and summary.total.graded == 3
    payload = summary.as_dict()
    assert payload["by_data_source"]["ds"]["pass_rate"] == 0.5
    plain = io.StringIO()
    render_summary(summary, plain, use_rich=False)
    lines = plain.getvalue().splitlines()
    assert lines[0].split()[:2] == ["data_source", "rows"]
    assert lines[-1].split()[:4] == ["total", "7", "3", "33.3%"]


def test_an_empty_input_needs_no_target(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from collimate_rl.cli import main

    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("\n\n")
    assert main(["grade", str(src), "-o", str(out), "--url", "http://127.0.0.1:9"]) == 0
    assert out.read_bytes() == b""
    assert "has no rows" in capsys.readouterr().err


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from collimate_rl.cli import main

    src = write_rows(tmp_path / "in.jsonl", [{"code": CODE, "ground_truth": UT}])
    assert main(["grade", str(tmp_path / "missing.jsonl"), "-o", str(src)]) == 2
    assert "no such input file" in capsys.readouterr().err
    assert main(["grade", str(src), "-o", str(src)]) == 2
    assert "the output file is the input file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["grade", str(src), "-o", str(tmp_path / "o"), "--chunk-size", "0"])
    assert info.value.code == 2


# -- rows as the Hub exports them (issue 24) -----------------------------------

HE_PROMPT = 'def double(x: int) -> int:\n    """Twice x.\n    >>> double(2)\n    4\n    """\n'
HE_TEST = "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(0) == 0\n"


def test_ids_in_their_order_and_problems_name_them(tmp_path: Path) -> None:
    src = write_rows(
        tmp_path / "in.jsonl",
        [
            {"id": "a", "task_id": "t", "code": CODE, "ground_truth": UT},
            {"task_id": "HumanEval/1", "problem_id": 9, "code": CODE, "ground_truth": UT},
            {"problem_id": 9, "code": CODE, "ground_truth": UT},
            {"code": CODE, "ground_truth": UT},  # line 4: numbered
            {"task_id": "HumanEval/3", "code": CODE, "ground_truth": {"what": 1}},
            {"code": CODE},  # line 6, no id: the line alone
            {"task_id": 70, "ground_truth": UT},
        ],
    )
    read = read_rows(src)
    assert [r.id for r in read.rows] == ["a", "HumanEval/1", 9, 4]
    assert [r.where for r in read.rows] == [
        "line 1 (id 'a')",
        "line 2 (id 'HumanEval/1')",
        "line 3 (id 9)",
        "line 4",
    ]
    shown = [str(p) for p in read.problems]
    assert shown[0].startswith("line 5 (id 'HumanEval/3'): no reward kind accepts")
    assert shown[1].startswith("line 6: no ground truth")
    assert shown[2].startswith("line 7 (id 70): no code")
    # --id-field names the one field: the others are not looked at
    named = read_rows(src, RowOptions(id_field="problem_id"))
    assert [r.id for r in named.rows] == [1, 9, 4]
    assert str(named.problems[0]).startswith("line 3: duplicate id 9 (first on line 2)")


def test_hub_test_columns_in_their_order(tmp_path: Path) -> None:
    stdin = {"language": "python", "test_cases": [{"input": "2\n", "output": "4\n"}]}
    src = write_rows(
        tmp_path / "in.jsonl",
        [
            # open-r1: verification_info (a JSON string) before any other test column
            {
                "code": "print(2 * int(input()))",
                "verification_info": json.dumps(stdin),
                "test": HE_TEST,
            },
            # APPS: input_output
            {
                "code": CODE,
                "input_output": json.dumps({"fn_name": "solve", "inputs": [[1]], "outputs": [[2]]}),
            },
            # MBPP (full): test_list with test_setup_code; (sanitized): with test_imports
            {
                "code": "def half(x):\n    return x / 2\n",
                "test_setup_code": "import fractions",
                "test_list": ["assert half(fractions.Fraction(1)) == fractions.Fraction(1, 2)"],
            },
            {
                "code": "def f():\n    return 1\n",
                "test_imports": ["import math", "import os"],
                "test_list": ["assert math.isclose(f(), 1)"],
            },
            # HumanEval: test (check), the entry from entry_point, the prompt joined
            {
                "completion": "    return 2 * x\n",
                "prompt": HE_PROMPT,
                "test": HE_TEST,
                "entry_point": "double",
            },
            # KodCode: test (a pytest module)
            {
                "code": "def add(a, b):\n    return a + b\n",
                "test": "from solution import add\n\ndef test_add():\n    assert add(1, 2) == 3\n",
            },
            # the usual paths come first
            {"code": CODE, "ground_truth": UT, "test_list": ["assert False"]},
        ],
    )
    read = read_rows(src)
    assert read.problems == []
    kinds = [type(read.specs[r.spec_key]).__name__ for r in read.rows]
    assert kinds == [
        "StdinStdoutReward",
        "CallReward",
        "AssertReward",
        "AssertReward",
        "AssertReward",
        "PytestReward",
        "UnitTestReward",
    ]
    mbpp, sanitized = read.specs[read.rows[2].spec_key], read.specs[read.rows[3].spec_key]
    assert getattr(mbpp, "setup", None) == "import fractions"
    assert getattr(sanitized, "setup", None) == "import math\nimport os"
    humaneval = read.rows[4]
    assert humaneval.entry == "double"
    assert humaneval.code == HE_PROMPT + "    return 2 * x\n"  # prompt + completion
    # --no-join-prompt: the completion alone
    (alone,) = [r for r in read_rows(src, RowOptions(join_prompt=False)).rows if r.line == 5]
    assert alone.code == "return 2 * x"
    # --ground-truth-field: that field only
    (p, *_) = read_rows(src, RowOptions(ground_truth_field="ground_truth")).problems
    assert p.line == 1 and "'ground_truth'" in p.message


def test_a_completion_is_graded_over_a_reference_code_column(tmp_path: Path) -> None:
    """An MBPP export holds the reference solution in ``code``: a row with a
    completion beside it grades the completion; one without grades ``code``
    (the export as is: a sanity check)."""
    wrong = "def add(a, b):\n    return a - b\n"
    row = {
        "task_id": 1,
        "code": "def add(a, b):\n    return a + b\n",
        "test_list": ["assert add(1, 2) == 3"],
    }
    src = write_rows(tmp_path / "in.jsonl", [row, {**row, "task_id": 2, "completion": wrong}])
    read = read_rows(src)
    assert [r.code for r in read.rows] == [row["code"], wrong.strip()]
    assert read.completion_over_code == 1
    (named,) = read_rows(src, RowOptions(code_field="code")).rows[1:]
    assert named.code == row["code"]


def test_code_field_takes_the_first_of_a_list_of_solutions(tmp_path: Path) -> None:
    """APPS keeps its reference solutions as a JSON list (a list in Parquet)."""
    io_spec = json.dumps({"inputs": ["1\n"], "outputs": ["2\n"]})
    src = write_rows(
        tmp_path / "in.jsonl",
        [
            {
                "problem_id": 0,
                "solutions": json.dumps(["print(2)", "print(1 + 1)"]),
                "input_output": io_spec,
            },
            {"problem_id": 1, "solutions": ["print(2)"], "input_output": io_spec},
            {"problem_id": 2, "solutions": "[]", "input_output": io_spec},
            {"problem_id": 3, "solutions": "print([1])", "input_output": io_spec},
        ],
    )
    read = read_rows(src, RowOptions(code_field="solutions"))
    assert [(r.id, r.code) for r in read.rows] == [
        (0, "print(2)"),
        (1, "print(2)"),
        (3, "print([1])"),
    ]
    assert "empty list of solutions" in str(read.problems[0])


def test_first_failure_reasons_and_the_summary_column() -> None:
    from collimate_rl.dataset_grading.results import first_failure

    def failed(**detail: Any) -> GradeResult:
        return GradeResult(reward=0.0, detail=detail)

    load = "error while loading the candidate: SyntaxError: invalid syntax (c.py, line 2)"
    assert first_failure(failed(load_error=load)) == "did not load: SyntaxError"
    assert first_failure(failed(load_error="the exec budget ran out", timeout=True)) == (
        "did not load: timeout"
    )
    name_error = {"index": 0, "reason": "error", "message": "NameError: name 'y' is not defined"}
    assert first_failure(failed(failed=[name_error])) == "error: NameError"
    wrong = {"index": 1, "reason": "wrong_answer", "message": "AssertionError: x"}
    assert first_failure(failed(failed=[wrong, name_error])) == "wrong_answer"
    assert first_failure(failed(failed=[{"reason": "timeout"}], timeout=True)) == "timeout"
    assert first_failure(GradeResult(reward=1.0)) is None
    assert first_failure(GradeResult(reward=0.0, infra_error=True)) is None

    rows = [_row(str(i)) for i in range(4)]
    records = [
        result_record(rows[0], failed(failed=[name_error]), "py"),
        result_record(rows[1], failed(failed=[name_error]), "py"),
        result_record(rows[2], failed(failed=[wrong]), "py"),
        result_record(rows[3], GradeResult(reward=1.0), "py"),
    ]
    assert records[0]["reason"] == "error: NameError"
    assert "first failure: test 0 error: NameError" in records[0]["explain"]
    assert records[3]["reason"] is None and records[3]["explain"].startswith("passed")
    summary = summarize(rows, [], records)
    assert summary.by_source["ds"].top_failure == "error: NameError (2)"
    assert summary.as_dict()["first_failures"] == {"error: NameError": 2, "wrong_answer": 1}
    plain = io.StringIO()
    render_summary(summary, plain, use_rich=False)
    header, line = plain.getvalue().splitlines()
    assert header.endswith("top first failure") and line.endswith("error: NameError (2)")


def test_input_format_by_suffix_or_named(tmp_path: Path) -> None:
    from collimate_rl.dataset_grading.rows import input_format

    assert input_format("a/b.parquet") == "parquet"
    assert input_format("a/b.PARQUET") == "parquet"
    assert input_format("a/b.jsonl") == input_format("a/b") == "jsonl"
    assert input_format("a/b.jsonl", "parquet") == "parquet"
    with pytest.raises(ValueError, match="format"):
        input_format("a/b", "csv")
