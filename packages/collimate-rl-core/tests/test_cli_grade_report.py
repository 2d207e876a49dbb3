"""``collimate grade --report``: a real run against the real local backend
(through a proxy that fails some execs, so rows hit infrastructure errors),
on a file whose pass rates are known per data source; the HTML page is read
back: its table, its outcome chart and its rewards' histogram."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import pytest

from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.testing import serve_tcp

SVG = "{http://www.w3.org/2000/svg}"
GROUND_TRUTH = [{"input": [i], "output": 2 * i} for i in range(4)]
RIGHT = "def solve(x):\n    return 2 * x\n"
HALF = "def solve(x):\n    return 2 * x if x < 2 else -1\n"  # 2 of 4 tests
WRONG = "def solve(x):\n    return -1\n"
MARK = "# INFRA-FAULT\n"

#: (data source or None, code) per row: alpha 3 of 4 graded rows pass (2 more
#: hit infrastructure errors), beta 1 of 4 (one partly right) and one invalid
#: row, rows without a source 2 of 2.
ROWS: list[tuple[str | None, str]] = [
    ("alpha", RIGHT),
    ("alpha", RIGHT),
    ("alpha", RIGHT),
    ("alpha", WRONG),
    ("alpha", MARK + RIGHT),
    ("alpha", MARK + WRONG),
    ("beta", RIGHT),
    ("beta", HALF),
    ("beta", WRONG),
    ("beta", WRONG),
    (None, RIGHT),
    (None, RIGHT),
]


class FailingExecs:
    """Forwards to the backend, except an exec holding :data:`MARK`: a 500,
    the infrastructure's failure and not the candidate's."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.local = threading.local()

    def handle(self, method: str, path: str, body: bytes) -> tuple[int, Any]:
        if path.endswith("/exec") and MARK.strip().encode() in body:
            return 500, {"error": "injected fault", "error_code": "internal"}
        client = getattr(self.local, "client", None)
        if client is None:
            client = self.local.client = httpx.Client(base_url=self.target, timeout=120)
        reply = client.request(
            method, path, content=body or None, headers={"Content-Type": "application/json"}
        )
        return reply.status_code, reply.json()


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with LocalCollimateBackend() as b:
        yield b


def write_dataset(path: Path) -> None:
    lines = []
    for i, (source, code) in enumerate(ROWS):
        row: dict[str, Any] = {"id": f"r{i}", "code": code, "ground_truth": GROUND_TRUTH}
        if source is not None:
            row["data_source"] = source
        lines.append(json.dumps(row))
    lines.append(json.dumps({"id": "bad", "data_source": "beta", "code": RIGHT}))  # no tests
    path.write_text("\n".join(lines) + "\n")


class Page(HTMLParser):
    """The table's cells by data source and field, and the inline SVGs' text."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: dict[str, dict[str, str]] = {}
        self.scripts = 0
        self.external: list[str] = []
        self._row: str | None = None
        self._field: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "script":
            self.scripts += 1
        for key in ("src", "href"):
            if a.get(key):
                self.external.append(str(a[key]))
        if tag == "tr" and (a.get("data-source") or a.get("data-total")):
            self._row = "(total)" if a.get("data-total") else a["data-source"]
            self.cells[str(self._row)] = {}
        if tag == "td" and self._row is not None:
            self._field = a.get("data-field")

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._field = None
        if tag == "tr":
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._row is not None and self._field is not None:
            self.cells[self._row][self._field] = data


def svgs(page: str) -> dict[str, ET.Element]:
    """Each inline chart, parsed as XML, by its title."""
    found = {}
    for text in re.findall(r"<svg .*?</svg>", page, flags=re.S):
        root = ET.fromstring(text)
        title = root.find(f"{SVG}title")
        assert title is not None
        found[title.text or ""] = root
    return found


def values(root: ET.Element, cls: str) -> dict[tuple[str, str], float]:
    return {
        (str(r.get("data-series")), str(r.get("data-category"))): float(r.get("data-value", ""))
        for r in root.iter(f"{SVG}rect")
        if r.get("class") == cls
    }


def test_the_report_shows_pass_rates_outcomes_and_rewards(
    tmp_path: Path, backend: LocalCollimateBackend
) -> None:
    src, out, report = tmp_path / "mixed.jsonl", tmp_path / "out.jsonl", tmp_path / "r.html"
    write_dataset(src)
    proxy = FailingExecs(backend.base_url)
    with serve_tcp(proxy.handle) as url:
        cmd = [sys.executable, "-m", "collimate_rl", "grade", str(src), "-o", str(out)]
        done = subprocess.run(
            [*cmd, "--url", url, "--skip-invalid", "--report", str(report)],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 1, done.stderr  # rows left by infra errors: rerun
    page_text = report.read_text()
    page = Page()
    page.feed(page_text)
    assert page.scripts == 0 and page.external == []  # self-contained
    assert "running the same command again" in page_text  # infra errors: rerun

    cells = page.cells
    assert set(cells) == {"alpha", "beta", "mixed.jsonl", "(total)"}  # no source: the file's name
    want = {
        "alpha": ("6", "4", "3", "75.0%", "1", "2", "0"),
        "beta": ("5", "4", "1", "25.0%", "3", "0", "1"),
        "mixed.jsonl": ("2", "2", "2", "100.0%", "0", "0", "0"),
        "(total)": ("13", "10", "6", "60.0%", "4", "2", "1"),
    }
    fields = ("rows", "graded", "passed", "pass_rate", "failed", "infra_errors", "invalid")
    for source, expected in want.items():
        assert tuple(cells[source][f] for f in fields) == expected, source
    assert cells["beta"]["mean_reward"] == "0.375"  # (1 + 0.5 + 0 + 0) / 4

    charts = svgs(page_text)
    rates = values(charts["Pass rate per data source"], "bar")
    assert rates == {
        ("pass rate", "alpha"): 75.0,
        ("pass rate", "beta"): 25.0,
        ("pass rate", "mixed.jsonl"): 100.0,
    }
    outcomes = values(charts["Rows by outcome per data source"], "bar")
    assert outcomes[("infra error (no reward)", "alpha")] == 2  # kept apart ...
    assert outcomes[("failed (wrong or partly right)", "alpha")] == 1  # ... from wrong answers
    assert outcomes[("invalid row", "beta")] == 1
    assert outcomes[("failed (wrong or partly right)", "beta")] == 3

    hist = charts["Rewards of the graded rows"]
    bins = [
        (float(r.get("data-low", "")), float(r.get("data-value", "")))
        for r in hist.iter(f"{SVG}rect")
        if r.get("class") == "bin"
    ]
    assert len(bins) == 10 and sum(count for _, count in bins) == 10  # graded rows only
    by_low = {round(low, 6): count for low, count in bins}
    assert {low: n for low, n in by_low.items() if n} == {0.0: 3, 0.5: 1, 0.9: 6}


def test_a_report_may_not_overwrite_the_input(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    write_dataset(src)
    done = subprocess.run(
        [sys.executable, "-m", "collimate_rl", "grade", str(src), "-o", str(tmp_path / "o.jsonl"),
         "--url", "http://127.0.0.1:9", "--report", str(src)],
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert "the report file is the input or the output file" in done.stderr
    assert json.loads(src.read_text().splitlines()[0])["id"] == "r0"  # untouched
