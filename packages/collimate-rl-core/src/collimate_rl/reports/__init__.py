"""Figures drawn without a plotting stack: SVG charts (:mod:`.svg_chart`)
that the benchmarks write beside their results (described in the results
JSON: :mod:`.chart_spec`) and that ``collimate grade --report`` inlines in
its HTML page.

Pure text building, standard library only: nothing here imports the rest of
``collimate_rl``.
"""

from __future__ import annotations

from . import svg_chart
from .chart_spec import ChartSpecError, render_chart, write_charts
from .svg_chart import *  # noqa: F403 (svg_chart's __all__, the one list of its public names)

__all__ = ["ChartSpecError", "render_chart", "write_charts"]
__all__ += svg_chart.__all__
