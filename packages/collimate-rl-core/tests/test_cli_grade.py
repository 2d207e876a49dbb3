"""``collimate grade`` as a real process against the real local backend.

The dataset mixes reward kinds (unit tests, stdio, property, assert, call,
stdin/stdout), code given as is, as a completion and as a chat transcript,
and right, wrong and partially right candidates whose reward is known in
advance, so every row of the output is checked, not only the totals.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from collimate_rl import seed_from_key
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.testing import serve_tcp

#: (kind, ground truth, [(candidate, reward)]): right 1.0, wrong 0.0, partial 0.5
VOWELS = {
    "reference": "    return sum(c in 'aeiouAEIOU' for c in x)",
    "generator": "''.join(random.choice('abcdEIOUxyz') for _ in range(8))",
    "k": 8,
}


def _kinds(p: int) -> list[tuple[str, Any, list[tuple[str, float]]]]:
    """The prompts of family ``p``: each kind, its ground truth varied by ``p``."""
    m = p % 5 + 2
    return [
        (
            "unit_test",
            [{"input": [i], "output": m * i} for i in range(4)],
            [
                (f"def solve(x):\n    return {m} * x\n", 1.0),
                (f"def solve(x):\n    return {m} * x if x < 2 else -1\n", 0.5),
                ("def solve(x):\n    return -1\n", 0.0),
            ],
        ),
        (
            "stdio",
            {"inputs": ["3 4\n", "1 1\n", "5 5\n", "0 2\n"], "outputs": ["7", "2", "10", "2"]},
            [
                ("a, b = map(int, input().split())\nprint(a + b)\n", 1.0),
                ("a, b = map(int, input().split())\nprint(a + b if a < 2 else 0)\n", 0.5),
                ("print(-1)\n", 0.0),
            ],
        ),
        (
            "property",
            VOWELS,
            [
                ("def solve(x):\n    return sum(c in 'aeiouAEIOU' for c in x)\n", 1.0),
                ("def solve(x):\n    return -1\n", 0.0),
            ],
        ),
        (
            "assert",
            {
                "test_list": [
                    f"assert add(1, 2) == {3 + m}",
                    f"assert add(0, 0) == {m}",
                    f"assert add(2, 2) == {4 + m}",
                    f"assert add(-1, 1) == {m}",
                ]
            },
            [
                (f"def add(a, b):\n    return a + b + {m}\n", 1.0),
                (f"def add(a, b):\n    return a + b + {m} if a > 0 else 99\n", 0.5),
                ("def add(a, b):\n    return None\n", 0.0),
            ],
        ),
        (
            "call",
            {
                "input_output": json.dumps(
                    {
                        "fn_name": "times",
                        "inputs": [[1], [2], [3], [4]],
                        "outputs": [[m], [2 * m], [3 * m], [4 * m]],
                    }
                )
            },
            [
                (f"def times(x):\n    return {m} * x\n", 1.0),
                (f"def times(x):\n    return {m} * x if x < 3 else 0\n", 0.5),
                ("def times(x):\n    return 0\n", 0.0),
            ],
        ),
        (
            "stdin_stdout",
            {
                "language": "python",
                "test_cases": [
                    {"input": f"{i}\n", "output": f"{m * i}\n", "type": "stdin_stdout"}
                    for i in range(1, 5)
                ],
            },
            [
                (f"print({m} * int(input()))\n", 1.0),
                (f"n = int(input())\nprint({m} * n if n < 3 else 0)\n", 0.5),
                ("print('nope')\n", 0.0),
            ],
        ),
    ]


def _as_row(i: int, code: str) -> dict[str, Any]:
    """Code as is, as a fenced completion, or as the last turn of a chat."""
    fenced = f"Let me think.\n\n```python\n{code}```\n\nThat should do it."
    if i % 3 == 0:
        return {"code": code}
    if i % 3 == 1:
        return {"completion": fenced}
    return {
        "response": [
            {"role": "user", "content": "solve it"},
            {"role": "assistant", "content": fenced},
        ]
    }


def make_dataset(path: Path, n: int, group_size: int = 8) -> dict[str, dict[str, Any]]:
    """``n`` rows, groups of ``group_size`` completions per prompt; returns
    what each row id must get: its reward and its group."""
    expected: dict[str, dict[str, Any]] = {}
    lines = []
    for i in range(n):
        prompt = i // group_size
        kind, gt, candidates = _kinds(prompt // 6)[prompt % 6]
        code, reward = candidates[i % len(candidates)]
        row = {
            "id": f"r{i}",
            "prompt_id": f"p{prompt}",
            "data_source": kind,
            "ground_truth": gt,
            **_as_row(i, code),
        }
        lines.append(json.dumps(row))
        expected[f"r{i}"] = {"reward": reward, "group": f"p{prompt}", "kind": kind}
    path.write_text("\n".join(lines) + "\n")
    return expected


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


def run(cmd: list[str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def records(out: Path) -> list[dict[str, Any]]:
    """Every line of the output, each required to parse."""
    return [json.loads(line) for line in out.read_text().splitlines()]


def check_rows(recs: list[dict[str, Any]], expected: dict[str, dict[str, Any]]) -> None:
    """Each record is its row's right result (reward, verdict, counts, seed)."""
    for rec in recs:
        want = expected[rec["id"]]
        assert rec["reward"] == pytest.approx(want["reward"]), (rec, want)
        assert rec["verdict"] == ("passed" if want["reward"] == 1.0 else "failed"), rec
        assert rec["infra_error"] is False and rec["error"] is None, rec
        assert rec["data_source"] == want["kind"]
        assert rec["seed"] == seed_from_key(want["group"])  # CRN: one seed per prompt
        assert rec["seed_ack"] == "verified"
        if isinstance(rec["total"], int) and rec["total"]:
            assert rec["passed"] / rec["total"] == pytest.approx(want["reward"])


def test_grades_1000_rows_row_by_row(tmp_path: Path, backend: LocalCollimateBackend) -> None:
    src, out, summary = tmp_path / "in.jsonl", tmp_path / "out.jsonl", tmp_path / "sum.json"
    expected = make_dataset(src, 1000)
    done = run(grade_cmd(src, out, backend.base_url, "--json-summary", str(summary)))
    assert done.returncode == 0, done.stderr
    recs = records(out)
    assert [r["id"] for r in recs] == [f"r{i}" for i in range(1000)]  # input order
    assert [r["line"] for r in recs] == list(range(1, 1001))
    check_rows(recs, expected)
    stats = json.loads(summary.read_text())
    assert (stats["rows"], stats["graded"], stats["infra_errors"], stats["exit_code"]) == (
        1000,
        1000,
        0,
        0,
    )
    for kind, tally in stats["by_data_source"].items():
        rewards = [e["reward"] for e in expected.values() if e["kind"] == kind]
        assert tally["graded"] == len(rewards)
        assert tally["pass_rate"] == pytest.approx(rewards.count(1.0) / len(rewards))
        assert tally["mean_reward"] == pytest.approx(sum(rewards) / len(rewards))
    assert set(stats["by_data_source"]) == {
        "unit_test",
        "stdio",
        "property",
        "assert",
        "call",
        "stdin_stdout",
    }
    assert "stdin_stdout" in done.stdout and "pass rate" in done.stdout  # the table
    again = run(grade_cmd(src, out, backend.base_url))  # nothing left to grade
    assert again.returncode == 0, again.stderr
    assert "1000 of 1000 rows already graded" in again.stderr
    assert records(out) == recs


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def test_interrupted_half_way_then_resumed(tmp_path: Path, backend: LocalCollimateBackend) -> None:
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    expected = make_dataset(src, 1000)
    # small chunks: a SIGINT stops the run within one chunk of where it is
    cmd = grade_cmd(src, out, backend.base_url, "--chunk-size", "50")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while _lines(out) < 500:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no progress"
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "interrupted" in err and "run the same command again" in err
    partial = records(out)  # every line parses ...
    assert 500 <= len(partial) < 1000
    assert len({r["id"] for r in partial}) == len(partial)
    check_rows(partial, expected)  # ... and is a right result

    done = run(cmd)
    assert done.returncode == 0, done.stderr
    assert f"resuming {out}: {len(partial)} of 1000 rows already graded" in done.stderr
    recs = records(out)
    assert [r["id"] for r in recs] == [f"r{i}" for i in range(1000)]  # no row twice, in order
    check_rows(recs, expected)
    by_id = {r["id"]: r for r in recs}
    assert all(by_id[r["id"]] == r for r in partial)  # the first run's results are kept


def test_bad_rows_stop_before_grading(tmp_path: Path, backend: LocalCollimateBackend) -> None:
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    make_dataset(src, 10)
    lines = src.read_text().splitlines()
    lines[2] = lines[2][:40]  # line 3: torn JSON
    lines[6] = json.dumps({"id": "x", "code": "def solve(x): pass", "ground_truth": {"q": 1}})
    src.write_text("\n".join(lines) + "\n")
    done = run(grade_cmd(src, out, backend.base_url))
    assert done.returncode == 2
    assert f"{src}:line 3: not valid JSON" in done.stderr
    assert f"{src}:line 7 (id 'x'): no reward kind accepts the ground truth" in done.stderr
    assert "2 of 10 rows cannot be graded; nothing was graded" in done.stderr
    assert not out.exists()

    skipped = run(grade_cmd(src, out, backend.base_url, "--skip-invalid"))
    assert skipped.returncode == 0, skipped.stderr
    recs = records(out)
    assert len(recs) == 10
    invalid = [r for r in recs if r["verdict"] == "invalid"]
    assert [(r["line"], r["reward"]) for r in invalid] == [(3, None), (7, None)]
    assert invalid[1]["id"] == "x" and "no reward kind" in invalid[1]["error"]


def test_a_torn_last_line_is_repaired(tmp_path: Path, backend: LocalCollimateBackend) -> None:
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    expected = make_dataset(src, 40)
    assert run(grade_cmd(src, out, backend.base_url)).returncode == 0
    whole = out.read_bytes().splitlines(keepends=True)
    out.write_bytes(b"".join(whole[:30]) + whole[30][: len(whole[30]) // 2])  # a kill mid-write
    done = run(grade_cmd(src, out, backend.base_url))
    assert done.returncode == 0, done.stderr
    assert "a torn last line" in done.stderr and "30 of 40 rows already graded" in done.stderr
    recs = records(out)
    assert [r["id"] for r in recs] == [f"r{i}" for i in range(40)]
    check_rows(recs, expected)


def test_another_input_is_refused(tmp_path: Path, backend: LocalCollimateBackend) -> None:
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    make_dataset(src, 12)
    assert run(grade_cmd(src, out, backend.base_url)).returncode == 0
    rows = [json.loads(line) for line in src.read_text().splitlines()]
    rows[4] = {**rows[4], "code": "def solve(x):\n    return -1\n"}
    rows[4].pop("completion", None)
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    refused = run(grade_cmd(src, out, backend.base_url))
    assert refused.returncode == 2
    assert "id 'r4'" in refused.stderr and "changed since it was graded" in refused.stderr
    again = run(grade_cmd(src, out, backend.base_url, "--overwrite"))
    assert again.returncode == 0, again.stderr
    assert records(out)[4]["reward"] == 0.0


class _FlakyProxy:
    """Forwards to the backend; while ``failing``, an exec whose body holds
    ``MARK`` gets a 500 (the infrastructure failed, not the candidate): a
    pack holding it fails, then the row fails alone."""

    MARK = b"INFRA-FAULT"

    def __init__(self, target: str) -> None:
        self.target = target
        self.failing = True
        self.local = threading.local()

    def handle(self, method: str, path: str, body: bytes) -> tuple[int, Any]:
        if self.failing and path.endswith("/exec") and self.MARK in body:
            return 500, {"error": "injected fault", "error_code": "internal"}
        client = getattr(self.local, "client", None)
        if client is None:
            client = self.local.client = httpx.Client(base_url=self.target, timeout=120)
        reply = client.request(
            method, path, content=body or None, headers={"Content-Type": "application/json"}
        )
        return reply.status_code, reply.json()


def test_infra_errors_are_flagged_never_zero_and_a_rerun_grades_them(
    tmp_path: Path, backend: LocalCollimateBackend
) -> None:
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    expected = make_dataset(src, 24)
    rows = [json.loads(line) for line in src.read_text().splitlines()]
    faulty = {"r3", "r6"}  # unit tests given as code: a comment does not change the reward
    for row in rows:
        if row["id"] in faulty:
            row["code"] = "# INFRA-FAULT\n" + row["code"]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    proxy = _FlakyProxy(backend.base_url)
    with serve_tcp(proxy.handle) as url:
        stopped = run(grade_cmd(src, out, url, "--on-infra-error", "raise"))
        assert stopped.returncode == 1, stopped.stderr
        assert "stopped at the first infrastructure error" in stopped.stderr
        named = r"line (4 \(id 'r3'\)|7 \(id 'r6'\)): "  # the row the error hit
        assert re.search("--on-infra-error raise\\): " + named, stopped.stderr), stopped.stderr
        assert not any(r["infra_error"] for r in records(out))
        assert not faulty & {r["id"] for r in records(out)}

        skipped = run(grade_cmd(src, out, url, "--on-infra-error", "skip"))
        assert skipped.returncode == 1, skipped.stderr
        assert "2 rows have no result (infrastructure errors, not written" in skipped.stderr
        assert sorted(r["id"] for r in records(out)) == sorted(set(expected) - faulty)

        first = run(grade_cmd(src, out, url, "--json-summary", "-"))
        assert first.returncode == 1, first.stderr
        summary = json.loads(first.stdout)
        assert summary["infra_errors"] == 2 and summary["graded"] == 22
        flagged = [r for r in records(out) if r["infra_error"]]
        assert {r["id"] for r in flagged} == faulty
        assert all(r["reward"] is None and r["verdict"] == "infra_error" for r in flagged)
        assert "2 rows hit infrastructure errors" in first.stderr
        assert re.search(r"\(first: " + named, first.stderr), first.stderr
        assert "Run the same command again" in first.stderr

        proxy.failing = False
        second = run(grade_cmd(src, out, url))
        assert second.returncode == 0, second.stderr
        assert "2 rows flagged with infra errors are graded again" in second.stderr
    recs = records(out)
    assert [r["id"] for r in recs] == [f"r{i}" for i in range(24)]
    check_rows(recs, expected)


def test_unreachable_target_and_unknown_template(
    tmp_path: Path, backend: LocalCollimateBackend
) -> None:
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    make_dataset(src, 3)
    unknown = run(grade_cmd(src, out, backend.base_url, "--template", "ruby9"))
    assert unknown.returncode == 2
    assert "does not serve template 'ruby9'" in unknown.stderr
    gone = run(grade_cmd(src, out, "http://127.0.0.1:9"), timeout=120)
    assert gone.returncode == 1
    assert "cannot reach the target" in gone.stderr
    assert not out.exists()  # checked before the output is touched
    assert run(grade_cmd(src, out, backend.base_url)).returncode == 0
    kept = out.read_bytes()
    gone = run(grade_cmd(src, out, "http://127.0.0.1:9", "--overwrite"), timeout=120)
    assert gone.returncode == 1 and out.read_bytes() == kept


def test_rows_go_by_ground_truth_when_grade_batch_takes_one_spec(
    tmp_path: Path,
    backend: LocalCollimateBackend,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The path for a ``grade_batch`` without one spec per candidate: a
    chunk's rows grouped by ground truth, the groups graded side by side
    with the concurrency split between them (in process, through main)."""
    from collimate_rl.cli import main
    from collimate_rl.dataset_grading import runner

    calls: list[tuple[int, Any]] = []
    real = runner.grade_batch

    def one_spec(client: Any, template: str, candidates: Any, spec: Any, **kw: Any) -> Any:
        assert not isinstance(spec, (list, tuple))
        calls.append((len(candidates), kw.get("concurrency")))
        return real(client, template, candidates, spec, **kw)

    monkeypatch.setattr(runner, "spec_lists_supported", lambda: False)
    monkeypatch.setattr(runner, "grade_batch", one_spec)
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    expected = make_dataset(src, 60)
    argv = ["grade", str(src), "-o", str(out), "--url", backend.base_url, "--concurrency", "6"]
    assert main([*argv, "--no-progress"]) == 0
    check_rows(records(out), expected)
    # 8 prompts, 7 distinct ground truths (stdio's is the same in every family)
    assert sorted(n for n, _ in calls) == [8, 8, 8, 8, 8, 8, 12]
    assert {c for _, c in calls} == {1}  # 6 execs in flight: 6 groups at a time, 1 each
    assert "pass rate" in capsys.readouterr().out


def test_rows_in_cpp_open_r1_and_codeforces(tmp_path: Path, backend: LocalCollimateBackend) -> None:
    """``collimate grade`` on open-r1 rows in C++ (``verification_info``)
    and its Codeforces rows (``official_tests``, with a Python checker):
    completions fenced as models write them, judged by the server."""
    from collimate_rl.testing.programs import CPP, need

    need("cpp")
    tests = [{"input": f"{i} {3 * i}\n", "output": f"{4 * i}\n"} for i in range(4)]
    checker = (
        "import sys\ninp, want, got = (open(p).read().split() for p in sys.argv[1:4])\n"
        "print(1 if got == want else 0)\n"
    )
    fenced = "```cpp\n" + CPP["right"] + "\n```"
    rows = []
    for n, (code, reward) in enumerate([(fenced, 1.0), (CPP["wrong"], 0.25)]):
        rows.append({"id": f"o{n}", "completion": code, "verification_info": {
            "language": "cpp", "test_cases": [{**t, "type": "stdin_stdout"} for t in tests]}})
        rows.append({"id": f"c{n}", "completion": code, "official_tests": tests,
                     "generated_checker": checker, "time_limit": 1.0, "memory_limit": 256,
                     "language": "cpp", "input_mode": "stdio"})  # fmt: skip
        want = {f"o{n}": reward, f"c{n}": reward}
        rows[-2]["want"], rows[-1]["want"] = want[f"o{n}"], want[f"c{n}"]
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    done = run(grade_cmd(src, out, backend.base_url, "--no-progress"))
    assert done.returncode == 0, done.stderr[-2000:]
    got = {r["id"]: r for r in records(out)}
    for row in rows:
        rec = got[row["id"]]
        assert rec["reward"] == pytest.approx(row["want"]), rec
        assert rec["infra_error"] is False
