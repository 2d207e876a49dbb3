"""``collimate grade`` on Parquet input, on the real local backend: rows
read one record batch at a time and numbered by row, the output resumed
and checked against the input as for JSONL, verl's rows (a chat
``prompt``, ``reward_model.ground_truth`` as a JSON string, a struct, or a
struct column mixing datasets whose missing keys Arrow fills with None),
and what happens without pyarrow."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from collimate_rl import seed_from_key
from collimate_rl.local_backend import LocalCollimateBackend

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with LocalCollimateBackend() as b:
        yield b


def grade_cmd(src: Path, out: Path, url: str, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "collimate_rl",
        "grade",
        str(src),
        "-o",
        str(out),
        "--url",
        url,
        *extra,
    ]


def run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.read_text().splitlines()]


# -- a mixed file: three kinds, code given three ways ---------------------------

UNIT = [{"input": [i], "output": 3 * i} for i in range(4)]
ASSERTS = {"test_list": ["assert add(1, 2) == 3", "assert add(2, 2) == 4"]}
STDIN = {
    "language": "python",
    "test_cases": [{"input": f"{i}\n", "output": f"{2 * i}\n"} for i in (1, 2)],
}
CANDIDATES: list[tuple[Any, list[tuple[str, float]]]] = [
    (
        UNIT,
        [
            ("def solve(x):\n    return 3 * x\n", 1.0),
            ("def solve(x):\n    return 3 * x if x < 2 else 0\n", 0.5),
            ("def solve(x):\n    return -1\n", 0.0),
        ],
    ),
    (
        ASSERTS,
        [
            ("def add(a, b):\n    return a + b\n", 1.0),
            ("def add(a, b):\n    return 3\n", 0.5),
        ],
    ),
    (STDIN, [("print(2 * int(input()))\n", 1.0), ("print(2)\n", 0.5)]),
]


def mixed_rows(n: int) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """``n`` rows, ground truths as JSON strings (one column type for every
    kind), code as is, as a completion, or as a chat's last turn."""
    rows, expected = [], {}
    for i in range(n):
        gt, candidates = CANDIDATES[(i // 4) % len(CANDIDATES)]
        code, reward = candidates[i % len(candidates)]
        fenced = f"Sure.\n```python\n{code}```\n"
        row: dict[str, Any] = {
            "id": f"r{i}",
            "prompt_id": f"p{i // 4}",
            "ground_truth": json.dumps(gt),
            "code": None,
            "completion": None,
            "response": None,
        }
        if i % 3 == 0:
            row["code"] = code
        elif i % 3 == 1:
            row["completion"] = fenced
        else:
            row["response"] = [
                {"role": "user", "content": "solve it"},
                {"role": "assistant", "content": fenced},
            ]
        rows.append(row)
        expected[f"r{i}"] = reward
    return rows, expected


def write_parquet(rows: list[dict[str, Any]], path: Path, row_group_size: int = 10) -> Path:
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=row_group_size)
    return path


def check(recs: list[dict[str, Any]], expected: dict[str, float]) -> None:
    for rec in recs:
        assert rec["reward"] == pytest.approx(expected[rec["id"]]), rec
        assert rec["infra_error"] is False and rec["seed_ack"] == "verified", rec
        assert rec["line"] == int(rec["id"][1:]) + 1  # the 1-based row number
        assert rec["seed"] == seed_from_key(f"p{(rec['line'] - 1) // 4}")


def test_parquet_is_graded_resumed_and_checked_like_jsonl(
    tmp_path: Path, backend: LocalCollimateBackend
) -> None:
    rows, expected = mixed_rows(48)
    src, out = write_parquet(rows, tmp_path / "in.parquet"), tmp_path / "out.jsonl"
    assert pq.ParquetFile(src).num_row_groups == 5  # read across row groups
    done = run(grade_cmd(src, out, backend.base_url))
    assert done.returncode == 0, done.stderr
    recs = records(out)
    assert [r["id"] for r in recs] == [f"r{i}" for i in range(48)]
    check(recs, expected)

    again = run(grade_cmd(src, out, backend.base_url))
    assert again.returncode == 0 and "48 of 48 rows already graded" in again.stderr

    whole = out.read_bytes().splitlines(keepends=True)  # a kill after 20 rows, mid-write
    out.write_bytes(b"".join(whole[:20]) + whole[20][:30])
    resumed = run(grade_cmd(src, out, backend.base_url))
    assert resumed.returncode == 0, resumed.stderr
    assert "20 of 48 rows already graded" in resumed.stderr and "torn last line" in resumed.stderr
    assert records(out) == recs

    rows[4] = {**rows[4], "completion": "def add(a, b):\n    return 0\n"}
    write_parquet(rows, src)
    refused = run(grade_cmd(src, out, backend.base_url))
    assert refused.returncode == 2
    assert f"id 'r4' ({src} row 5) changed since it was graded" in refused.stderr

    named = tmp_path / "rollouts.data"  # no .parquet suffix: --format says it
    named.write_bytes(src.read_bytes())
    by_flag = run(
        grade_cmd(named, tmp_path / "named.jsonl", backend.base_url, "--format", "parquet")
    )
    assert by_flag.returncode == 0, by_flag.stderr
    assert records(tmp_path / "named.jsonl")[4]["reward"] == 0.0


# -- verl's rows -----------------------------------------------------------------

HE_PROMPT = (
    'def add(a: int, b: int) -> int:\n    """Add a and b.\n    >>> add(2, 3)\n    5\n    """\n'
)
HE_TRUTH = {
    "test": "def check(candidate):\n    assert candidate(2, 3) == 5\n"
    "    assert candidate(-1, 1) == 0\n",
    "entry_point": "add",
}
MBPP_TRUTH = {
    "test_list": ["assert mul(2, 3) == 6", "assert mul(0, 5) == 0"],
    "test_setup_code": "",
}
KODCODE_TRUTH = {
    "test": "from solution import reverse\n\ndef test_two():\n    assert reverse('ab') == 'ba'\n\n"
    "def test_empty():\n    assert reverse('') == ''\n"
}
OPEN_R1_TRUTH = {
    "language": "python",
    "test_cases": [
        {"input": "2\n", "output": "4\n", "type": "stdin_stdout"},
        {"input": "5\n", "output": "10\n", "type": "stdin_stdout"},
    ],
}

#: (data_source, the user's message, ground truth, completion, reward, first failure)
VERL: list[tuple[str, str, dict[str, Any], str, float, str | None]] = [
    (
        "mbpp",
        "Write mul(a, b).",
        MBPP_TRUTH,
        "```python\ndef mul(a, b):\n    return a * b\n```",
        1.0,
        None,
    ),
    (
        "mbpp",
        "Write mul(a, b).",
        MBPP_TRUTH,
        "```python\ndef mul(a, b):\n    return a + b\n```",
        0.0,
        "wrong_answer",
    ),
    # HumanEval in verl: the code prompt in the chat, a body-only completion
    (
        "humaneval",
        f"Complete this function.\n```python\n{HE_PROMPT}```",
        HE_TRUTH,
        "    return a + b\n",
        1.0,
        None,
    ),
    (
        "humaneval",
        f"Complete this function.\n```python\n{HE_PROMPT}```",
        HE_TRUTH,
        "    return a - b\n",
        0.0,
        "wrong_answer",
    ),
    (
        "kodcode",
        "Write reverse(s).",
        KODCODE_TRUTH,
        "```python\ndef reverse(s):\n    return s[::-1]\n```",
        1.0,
        None,
    ),
    (
        "kodcode",
        "Write reverse(s).",
        KODCODE_TRUTH,
        "```python\ndef reverse(s):\n    return undefined_name\n```",
        0.0,
        "error: NameError",
    ),
    (
        "kodcode",
        "Write reverse(s).",
        KODCODE_TRUTH,
        "```python\ndef reverse(s):\n    return s[:1\n```",
        0.0,
        "did not load: SyntaxError",
    ),
    (
        "kodcode",
        "Write reverse(s).",
        KODCODE_TRUTH,
        "```python\ndef reverse(s):\n    return ''.join(nope(s))\n```",
        0.0,
        "error: NameError",
    ),
    (
        "open-r1",
        "Read n; print 2n.",
        OPEN_R1_TRUTH,
        "```python\nprint(2 * int(input()))\n```",
        1.0,
        None,
    ),
    (
        "open-r1",
        "Read n; print 2n.",
        OPEN_R1_TRUTH,
        "```python\nn = int(input())\nprint(4 if n == 2 else 0)\n```",
        0.5,
        "wrong_answer",
    ),
]


def verl_frame(cases: list[Any], truth: str) -> Any:
    """verl's columns, as its preprocessing scripts build them, plus a
    completion column; ``truth``: "json" (a JSON string) or "struct"."""
    return pd.DataFrame(
        [
            {
                "data_source": source,
                "prompt": [
                    {"role": "system", "content": "You are a careful programmer."},
                    {"role": "user", "content": user},
                ],
                "ability": "code",
                "reward_model": {
                    "style": "rule",
                    "ground_truth": json.dumps(gt) if truth == "json" else gt,
                },
                "extra_info": {"split": "train", "index": i},
                "completion": completion,
            }
            for i, (source, user, gt, completion, *_) in enumerate(cases)
        ]
    )


@pytest.mark.parametrize(
    "variant",
    [
        "json",  # every kind as a JSON string
        "struct",  # one dataset: a struct column of one shape
        "mixed",  # four datasets: one struct type, the keys a row lacks filled with None
    ],
)
def test_verl_parquet_rows_grade_through_the_cli(
    variant: str, tmp_path: Path, backend: LocalCollimateBackend
) -> None:
    cases = [c for c in VERL if c[0] == "mbpp"] if variant == "struct" else VERL
    src, out = tmp_path / "train.parquet", tmp_path / "out.jsonl"
    summary = tmp_path / "summary.json"
    verl_frame(cases, "json" if variant == "json" else "struct").to_parquet(src)
    gt_type = pq.ParquetFile(src).schema_arrow.field("reward_model").type.field("ground_truth").type
    assert pa.types.is_struct(gt_type) == (variant != "json")
    if variant == "mixed":  # what the struct column hands a KodCode row
        kodcode = pq.read_table(src).to_pylist()[4]["reward_model"]["ground_truth"]
        assert kodcode["test_list"] is None and kodcode["entry_point"] is None

    done = run(grade_cmd(src, out, backend.base_url, "--json-summary", str(summary)))
    assert done.returncode == 0, done.stderr
    recs = records(out)
    assert [r["id"] for r in recs] == list(range(1, len(cases) + 1))  # numbered by row
    for rec, (source, _, _, _, reward, reason) in zip(recs, cases, strict=True):
        assert rec["data_source"] == source
        assert rec["reward"] == pytest.approx(reward), rec
        assert rec["reason"] == reason, rec
    stats = json.loads(summary.read_text())["by_data_source"]
    assert stats["mbpp"]["first_failures"] == {"wrong_answer": 1}
    if variant != "struct":
        assert stats["kodcode"]["first_failures"] == {
            "error: NameError": 2,
            "did not load: SyntaxError": 1,
        }
        assert stats["humaneval"]["pass_rate"] == 0.5
        assert "error: NameError (2)" in done.stdout  # the table's top first failure


# -- without pyarrow, and what is not Parquet -----------------------------------


def test_without_pyarrow_the_error_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from collimate_rl.cli import main

    rows, _ = mixed_rows(4)
    src, out = write_parquet(rows, tmp_path / "in.parquet"), tmp_path / "out.jsonl"
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow fails
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    assert main(["grade", str(src), "-o", str(out), "--url", "http://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert 'pip install "collimate-rl-core[parquet]"' in err and "pyarrow" in err
    assert not out.exists()


def test_a_file_that_is_not_parquet_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from collimate_rl.cli import main

    src = tmp_path / "in.parquet"
    src.write_text('{"code": "x", "ground_truth": []}\n')
    assert main(["grade", str(src), "-o", str(tmp_path / "o"), "--url", "http://127.0.0.1:9"]) == 2
    assert f"{src} is not a readable Parquet file" in capsys.readouterr().err


def test_rows_are_read_a_batch_at_a_time_and_only_the_columns_used(tmp_path: Path) -> None:
    """20 MB of reference solutions in 100-row groups: reading every column
    holds about one row group at a time; the rows' reader never decodes a
    column it does not use."""
    from collimate_rl.dataset_grading.parquet import iter_parquet_rows
    from collimate_rl.dataset_grading.rows import RowOptions, _columns

    n = 2000
    table = pa.table(
        {
            "id": list(range(n)),
            "code": ["def solve(x):\n    return x\n"] * n,
            "ground_truth": [json.dumps(UNIT)] * n,
            "solutions": [os.urandom(5000).hex() for _ in range(n)],  # 10 kB each
        }
    )
    src = tmp_path / "big.parquet"
    pq.write_table(table, src, row_group_size=100)
    size = table.nbytes
    del table

    def peak(columns: set[str] | None) -> tuple[int, int]:
        base, top, count = pa.total_allocated_bytes(), 0, 0
        for number, _ in iter_parquet_rows(src, columns, batch_size=64):
            top = max(top, pa.total_allocated_bytes() - base)
            count += 1
            assert number == count
        return top, count

    top, count = peak(None)
    assert count == n and top < size / 4, (top, size)
    top, count = peak(_columns(RowOptions()))
    assert count == n and top < 1_000_000, top  # no solutions decoded
    assert "solutions" not in _columns(RowOptions())
    assert "solutions" in _columns(RowOptions(code_field="solutions"))
