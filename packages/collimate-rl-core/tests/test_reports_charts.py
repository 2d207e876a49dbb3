"""The SVG charts, drawn from a known results file and read back as XML:
what a reader sees (titles, axis labels, legend, value labels) and what the
shapes say (bars from zero, heights in proportion to the values, points in
order)."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from collimate_rl.reports import (
    ChartSpecError,
    Series,
    bar_chart,
    bin_counts,
    even_edges,
    readable_number,
    render_chart,
    round_edges,
    write_charts,
)

SVG = "{http://www.w3.org/2000/svg}"

#: A results file as a benchmark writes it: measurements and chart entries.
RESULTS: dict[str, Any] = {
    "benchmark": "bench_exec_latency",
    "run": {"date": "2026-12-02", "rounds": 1},
    "charts": [
        {
            "name": "percentiles",
            "kind": "bar",
            "title": "One-shot exec latency",
            "categories": ["p50", "p99"],
            "series": [
                {"name": "ours", "values": [4.6, 9.2]},
                {"name": "collimate-rl 0.5.0", "values": [23.0, 46.0]},
            ],
            "y_label": "latency (ms)",
            "x_label": "percentile",
        },
        {
            "name": "scaling",
            "kind": "line",
            "title": "Throughput against threads",
            "x_values": [1, 2, 4, 8],
            "log_x": True,
            "series": [{"name": "ours", "values": [100, 190, 350, 600]}],
            "y_label": "requests per second",
            "x_label": "client threads",
        },
        {
            "name": "spread",
            "kind": "histogram",
            "title": "Latency distribution",
            "edges": [0, 5, 10, 15],
            "series": [{"name": "ours", "values": [40, 8, 2]}],
            "y_label": "execs",
            "x_label": "latency (ms)",
        },
    ],
}


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    return root


def texts(root: ET.Element, cls: str) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG}text") if cls in (t.get("class") or "")]


def shapes(root: ET.Element, tag: str, cls: str) -> list[ET.Element]:
    return [e for e in root.iter(f"{SVG}{tag}") if e.get("class") == cls]


def axis_zero_y(root: ET.Element) -> float:
    """The y of the value axis' 0 tick."""
    for t in root.iter(f"{SVG}text"):
        if t.get("class") == "tick y" and t.text == "0":
            return float(t.get("y", "nan")) - 4  # the label sits 4 px under its line
    raise AssertionError("no 0 tick on the value axis")


def test_a_bar_chart_from_a_results_file(tmp_path: Path) -> None:
    path = tmp_path / "bench_exec_latency.json"
    path.write_text(json.dumps(RESULTS))
    written = write_charts(path, RESULTS)
    assert [p.name for p in written] == [
        "bench_exec_latency-percentiles.svg",
        "bench_exec_latency-scaling.svg",
        "bench_exec_latency-spread.svg",
    ]
    root = parse(written[0].read_text())
    assert texts(root, "chart-title") == ["One-shot exec latency"]
    assert texts(root, "axis-label y") == ["latency (ms)"]
    assert texts(root, "axis-label x") == ["percentile"]
    assert texts(root, "tick x") == ["p50", "p99"]
    legend = [
        e.get("data-series") for e in root.iter(f"{SVG}g") if e.get("class") == "legend-entry"
    ]
    assert legend == ["ours", "collimate-rl 0.5.0"]
    assert texts(root, "value") == ["4.6", "23", "9.2", "46"]

    bars = shapes(root, "rect", "bar")
    got = {(b.get("data-series"), b.get("data-category")): b for b in bars}
    assert {k: float(b.get("data-value", "nan")) for k, b in got.items()} == {
        ("ours", "p50"): 4.6,
        ("collimate-rl 0.5.0", "p50"): 23.0,
        ("ours", "p99"): 9.2,
        ("collimate-rl 0.5.0", "p99"): 46.0,
    }
    zero = axis_zero_y(root)
    height = {k: float(b.get("height", "nan")) for k, b in got.items()}
    for k, b in got.items():  # every bar stands on zero
        assert float(b.get("y", "nan")) + height[k] == pytest.approx(zero, abs=0.02)
    # heights in proportion to the values: 0.5.0's p50 bar is 5x ours
    assert height[("collimate-rl 0.5.0", "p50")] / height[("ours", "p50")] == pytest.approx(
        23.0 / 4.6, rel=1e-3
    )
    assert height[("ours", "p99")] / height[("ours", "p50")] == pytest.approx(2.0, rel=1e-3)


def test_a_line_chart_keeps_its_points_in_order_and_in_proportion(tmp_path: Path) -> None:
    root = parse(render_chart(RESULTS["charts"][1]))
    assert texts(root, "axis-label x") == ["client threads"]
    assert texts(root, "axis-label y") == ["requests per second"]
    assert texts(root, "tick x") == ["1", "2", "4", "8"]
    points = shapes(root, "circle", "point")
    assert [float(p.get("data-value", "nan")) for p in points] == [100, 190, 350, 600]
    xs = [float(p.get("cx", "nan")) for p in points]
    steps = [b - a for a, b in pairwise(xs)]
    assert steps == pytest.approx([steps[0]] * 3, abs=0.02)  # log2 x: doublings evenly spaced
    zero = axis_zero_y(root)
    rise = [zero - float(p.get("cy", "nan")) for p in points]
    assert rise[3] / rise[0] == pytest.approx(6.0, rel=1e-3)  # from zero, not from 100
    assert texts(root, "value") == ["100", "190", "350", "600"]


def test_a_histogram_labels_its_bins_and_counts() -> None:
    root = parse(render_chart(RESULTS["charts"][2]))
    assert texts(root, "tick x") == ["0\u20135", "5\u201310", "10\u201315"]  # en dashes
    bins = shapes(root, "rect", "bin")
    assert [(b.get("data-low"), b.get("data-high"), b.get("data-value")) for b in bins] == [
        ("0.0", "5.0", "40.0"),
        ("5.0", "10.0", "8.0"),
        ("10.0", "15.0", "2.0"),
    ]
    heights = [float(b.get("height", "nan")) for b in bins]
    assert heights[0] / heights[1] == pytest.approx(5.0, rel=1e-3)
    ticks = [float(t) for t in texts(root, "tick y")]
    assert ticks[0] == 0 and all(t == int(t) for t in ticks)  # counts tick at whole numbers


def test_bin_counts_and_edges() -> None:
    edges = even_edges(0.0, 1.0, 10)
    assert len(edges) == 11 and edges[0] == 0.0 and edges[-1] == 1.0
    assert bin_counts([0.0, 0.05, 0.5, 0.99, 1.0, 1.0, 2.0, -1.0], edges) == (
        2, 0, 0, 0, 0, 1, 0, 0, 0, 3,
    )  # fmt: skip
    with pytest.raises(ValueError):
        even_edges(1.0, 1.0, 4)
    assert round_edges(521.3) == tuple(50.0 * i for i in range(12))  # 0-50, ..., 500-550
    assert round_edges(43.0, bins=10) == tuple(5.0 * i for i in range(10))


def test_text_is_escaped_and_numbers_read_plainly() -> None:
    svg = bar_chart(
        title="a <b> & 'c'",
        categories=["x<y"],
        series=[Series("ours & theirs", [0.000123])],
        y_label="ms",
    )
    root = parse(svg)
    assert texts(root, "chart-title") == ["a <b> & 'c'"]
    assert texts(root, "tick x") == ["x<y"]
    assert readable_number(1234.5) == "1234" and readable_number(2.0) == "2"
    assert readable_number(23.456) == "23.5" and readable_number(0.000123) == "0.000123"


def test_bad_entries_are_refused_with_a_reason() -> None:
    bad_length = {**RESULTS["charts"][0], "categories": ["p50"]}
    with pytest.raises(ChartSpecError, match="2 values for 1 categories"):
        render_chart(bad_length)
    with pytest.raises(ChartSpecError, match="unknown chart kind"):
        render_chart({**RESULTS["charts"][0], "kind": "pie"})
    with pytest.raises(ChartSpecError, match="'values' must be numbers"):
        render_chart({**RESULTS["charts"][0], "series": [{"name": "x", "values": ["1", 2]}]})


def test_the_module_redraws_a_results_file(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(RESULTS))
    done = subprocess.run(
        [sys.executable, "-m", "collimate_rl.reports", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    names = sorted(Path(line).name for line in done.stdout.splitlines())
    assert names == ["r-percentiles.svg", "r-scaling.svg", "r-spread.svg"]
    parse((tmp_path / "r-scaling.svg").read_text())
    (tmp_path / "bad.json").write_text("{")
    bad = subprocess.run(
        [sys.executable, "-m", "collimate_rl.reports", str(tmp_path / "bad.json")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 1 and "cannot read" in bad.stderr


def test_a_long_legend_wraps_and_pushes_the_plot_down() -> None:
    names = [f"a rather long name for series number {i}" for i in range(4)]
    root = parse(
        bar_chart(
            title="t",
            categories=["c"],
            series=[Series(name, [i + 1]) for i, name in enumerate(names)],
            y_label="u",
        )
    )
    entries = [e for e in root.iter(f"{SVG}g") if e.get("class") == "legend-entry"]
    assert [e.get("data-series") for e in entries] == names
    swatch_y = [float(e.find(f"{SVG}rect").get("y", "nan")) for e in entries]  # type: ignore[union-attr]
    assert len(set(swatch_y)) >= 2  # more than one row
    highest_bar = min(float(r.get("y", "nan")) for r in shapes(root, "rect", "bar"))
    assert highest_bar > max(swatch_y) + 12  # the plot starts below the last row
