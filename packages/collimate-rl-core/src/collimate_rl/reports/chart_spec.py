"""Charts described as JSON, drawn as SVG: what a benchmark's results file
holds, so that its figures can be drawn again from the file alone.

A results file (``benchmarks/results/<name>.json``) carries, beside its
measurements, a ``"charts"`` list; each entry is one chart::

    {"name": "p50",                      # the SVG is <results stem>-<name>.svg
     "kind": "bar",                      # or "line", or "histogram"
     "title": "...", "y_label": "latency (ms)", "x_label": "percentile",
     "categories": ["p50", "p99"],       # bar: one group per category
     "x_values": [1, 2, 4],              # line: one point per x ("log_x": true for doubling x)
     "edges": [0, 5, 10],                # histogram: bin edges (len(values) + 1)
     "series": [{"name": "ours", "values": [4.6, 9.1]}, ...]}

``python -m collimate_rl.reports RESULTS.json...`` writes each chart beside
its file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

from .svg_chart import Series, bar_chart, histogram, line_chart

__all__ = ["ChartSpecError", "render_chart", "write_charts"]


class ChartSpecError(ValueError):
    """A chart entry that cannot be drawn: says which and why."""


def _series(spec: Mapping[str, Any]) -> list[Series]:
    raw = spec.get("series")
    if not isinstance(raw, list) or not raw:
        raise ChartSpecError("'series' must be a non-empty list")
    out = []
    for entry in raw:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            raise ChartSpecError(f"a series needs a 'name' and 'values': {entry!r}")
        values = entry.get("values")
        if not isinstance(values, list) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in values
        ):
            raise ChartSpecError(f"series {entry['name']!r}: 'values' must be numbers")
        out.append(Series(entry["name"], values))
    return out


def _text(spec: Mapping[str, Any], key: str, default: str | None = None) -> str:
    value = spec.get(key, default)
    if not isinstance(value, str):
        raise ChartSpecError(f"{key!r} must be a string")
    return value


def _numbers(spec: Mapping[str, Any], key: str) -> list[float]:
    value = spec.get(key)
    if not isinstance(value, list) or not all(isinstance(v, (int, float)) for v in value):
        raise ChartSpecError(f"{key!r} must be a list of numbers")
    return [float(v) for v in value]


class _Common(TypedDict):
    """What every kind of chart takes from its entry."""

    title: str
    series: list[Series]
    x_label: str
    y_label: str


def render_chart(spec: Mapping[str, Any]) -> str:
    """One chart entry as SVG text (see the module docstring for its shape)."""
    kind = spec.get("kind")
    title = _text(spec, "title")
    y_label = _text(spec, "y_label", "count" if kind == "histogram" else None)
    x_label = _text(spec, "x_label", "")
    common = _Common(title=title, series=_series(spec), x_label=x_label, y_label=y_label)
    try:
        if kind == "bar":
            categories = spec.get("categories")
            if not isinstance(categories, list) or not all(isinstance(c, str) for c in categories):
                raise ChartSpecError("'categories' must be a list of strings")
            y_max = spec.get("y_max")
            y_max = float(y_max) if isinstance(y_max, (int, float)) else None
            return bar_chart(categories=categories, y_max=y_max, **common)
        if kind == "line":
            log_x = bool(spec.get("log_x", False))
            return line_chart(x_values=_numbers(spec, "x_values"), log_x=log_x, **common)
        if kind == "histogram":
            return histogram(edges=_numbers(spec, "edges"), **common)
    except ChartSpecError:
        raise
    except ValueError as exc:
        raise ChartSpecError(f"chart {title!r}: {exc}") from None
    raise ChartSpecError(f"unknown chart kind {kind!r} (bar, line or histogram)")


def write_charts(results_path: Path, results: Mapping[str, Any]) -> list[Path]:
    """Each of ``results["charts"]`` as ``<stem>-<name>.svg`` beside the
    results file; returns the files written."""
    charts = results.get("charts", [])
    if not isinstance(charts, Sequence):
        raise ChartSpecError("'charts' must be a list")
    written = []
    for spec in charts:
        if not isinstance(spec, Mapping):
            raise ChartSpecError(f"a chart entry must be an object: {spec!r}")
        name = _text(spec, "name")
        if not name or "/" in name or name.startswith("."):
            raise ChartSpecError(f"bad chart name {name!r}")
        target = results_path.with_name(f"{results_path.stem}-{name}.svg")
        target.write_text(render_chart(spec), encoding="utf-8")
        written.append(target)
    return written
