"""Figures drawn without a plotting stack: SVG charts (:mod:`.svg_chart`)
that the benchmarks write beside their results (described in the results
JSON: :mod:`.chart_spec`) and that ``collimate grade --report`` inlines in
its HTML page.

Pure text building, standard library only: nothing here imports the rest of
``collimate_rl``.
"""

from __future__ import annotations

from .chart_spec import ChartSpecError, render_chart, write_charts
from .svg_chart import (
    PALETTE,
    Series,
    bar_chart,
    bin_counts,
    even_edges,
    histogram,
    line_chart,
    readable_number,
    round_edges,
)

__all__ = [
    "PALETTE",
    "ChartSpecError",
    "Series",
    "bar_chart",
    "bin_counts",
    "even_edges",
    "histogram",
    "line_chart",
    "readable_number",
    "render_chart",
    "round_edges",
    "write_charts",
]
