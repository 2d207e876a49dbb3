"""Pieces several views draw: a latency table and a histogram, each as
plain lines and as a Rich renderable built from the same figures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .figures import PERCENTILES, bar, histogram, percentiles

__all__ = [
    "histogram_lines",
    "latency_lines",
    "latency_table",
    "histogram_panel",
    "stack",
]


def _pct_name(p: float) -> str:
    return "max" if p >= 100 else f"p{p:g}"


def latency_lines(series: Mapping[str, Sequence[float]]) -> list[str]:
    """One line per series: ``create  p50 1.2 ms  p90 ...  (n=40)``."""
    out = []
    width = max((len(k) for k in series), default=0)
    for name, values in series.items():
        pcts = percentiles(values)
        cells = "  ".join(f"{_pct_name(p)} {v:.1f}" for p, v in pcts.items())
        out.append(f"{name:<{width}}  {cells} ms  (n={len(values)})")
    return out


def histogram_lines(values: Sequence[float], buckets: int = 10) -> list[str]:
    rows = histogram(values, buckets)
    most = max((c for _, _, c in rows), default=0)
    return [f"{lo:8.1f} - {hi:8.1f} ms {c:6d} {bar(c, most)}".rstrip() for lo, hi, c in rows]


def latency_table(title: str, series: Mapping[str, Sequence[float]]) -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column("ms")
    for p in PERCENTILES:
        table.add_column(_pct_name(p), justify="right")
    table.add_column("n", justify="right")
    for name, values in series.items():
        pcts = percentiles(values)
        table.add_row(name, *(f"{v:.1f}" for v in pcts.values()), str(len(values)))
    return table


def histogram_panel(title: str, values: Sequence[float], buckets: int = 10) -> Any:
    from rich.panel import Panel
    from rich.text import Text

    body = Text("\n".join(histogram_lines(values, buckets)) or "(no samples yet)")
    return Panel(body, title=title, title_align="left")


def stack(*parts: Any) -> Any:
    """Renderables one under the other; a ``str`` part is shown as it is
    (no markup read into a template name, no highlighting split into it)."""
    from rich.console import Group
    from rich.text import Text

    return Group(*(Text(p) if isinstance(p, str) else p for p in parts))
