"""Bar, line and histogram charts as SVG text, with nothing to install.

The benchmarks draw their figures with it, and ``collimate grade --report``
inlines its charts in an HTML page; neither should need matplotlib (a
plotting stack is a heavy install for a grader, and its output differs from
one version to the next). The SVG is plain XML, so a test can parse what was
drawn and check it.

The charts are meant to be honest at a glance:

* the value axis starts at zero (bars that start elsewhere exaggerate);
* every axis carries a label, which the caller gives with its unit;
* a legend names each series, in the order given;
* every bar and point carries its value as a label, and as ``data-value``
  (with ``data-series`` and ``data-category`` or ``data-x``) for whoever
  reads the SVG as data.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import NamedTuple
from xml.sax.saxutils import escape, quoteattr

__all__ = [
    "PALETTE",
    "Series",
    "bar_chart",
    "bin_counts",
    "even_edges",
    "histogram",
    "line_chart",
    "readable_number",
    "round_edges",
]

#: Okabe and Ito's colours: told apart with any colour vision, and in grey.
PALETTE: tuple[str, ...] = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#D55E00",
    "#CC79A7",
    "#56B4E9",
    "#F0E442",
    "#000000",
)

_WIDTH = 720
_HEIGHT = 420
_LEFT = 78  # room for the value axis' ticks and label
_RIGHT = 24
_TOP = 64  # the title, then the legend's first row
_LEGEND_ROW = 18  # each further row of the legend pushes the plot down by this
_CHAR_WIDTH = 6.6  # an 11 px sans-serif character's width, about
_BOTTOM = 78  # the category labels, then the axis label
_FONT = "font-family:sans-serif"
#: Between a bin's edges in its label (a range, typeset as such).
_EN_DASH = "\u2013"


@dataclass(frozen=True, init=False)
class Series:
    """One named run of values: a bar per category, a point per x, or a
    count per histogram bin."""

    name: str
    values: tuple[float, ...]

    def __init__(self, name: str, values: Iterable[float]) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "values", tuple(float(v) for v in values))


def readable_number(value: float) -> str:
    """A value as a label: whole numbers bare, from 100 up rounded to a
    whole number, below that three significant figures."""
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    if abs(value) >= 100:
        return f"{value:.0f}"
    return f"{value:.3g}"


def even_edges(low: float, high: float, bins: int) -> tuple[float, ...]:
    """``bins`` equal bins from ``low`` to ``high``: ``bins + 1`` edges."""
    if bins < 1 or not high > low:
        raise ValueError(f"need bins >= 1 and high > low, got {bins}, {low}, {high}")
    step = (high - low) / bins
    return (*(low + i * step for i in range(bins)), high)


def round_edges(high: float, bins: int = 12) -> tuple[float, ...]:
    """Bins from zero of a round width (1, 2, 2.5 or 5 times a power of
    ten), about ``bins`` of them, the last reaching ``high``: bin labels a
    reader takes in at once (``0-10``, ``10-20``), unlike ``0-43.4``."""
    if not high > 0 or bins < 1:
        raise ValueError(f"need high > 0 and bins >= 1, got {high}, {bins}")
    step = _nice_step(high * 5 / bins)  # _nice_step aims at five steps a span
    count = math.ceil(high / step - 1e-9)
    return tuple(round(i * step, 12) for i in range(count + 1))  # 0.3, not 0.30000000000000004


def bin_counts(values: Iterable[float], edges: Sequence[float]) -> tuple[int, ...]:
    """How many values fall in each bin ``[edge_i, edge_i+1)``; the last bin
    holds its upper edge too. Values outside the edges are not counted: pick
    edges that hold them all (see :func:`even_edges`)."""
    if len(edges) < 2:
        raise ValueError("need at least two edges")
    counts = [0] * (len(edges) - 1)
    last = len(counts) - 1
    for value in values:
        if value < edges[0] or value > edges[-1]:
            continue
        for i in range(len(counts)):
            if value < edges[i + 1] or i == last:
                counts[i] += 1
                break
    return tuple(counts)


def _nice_step(span: float) -> float:
    """A tick step of 1, 2, 2.5 or 5 times a power of ten, giving about five ticks."""
    raw = span / 5
    power = 10.0 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * power:
            return factor * power
    return 10 * power


def _value_range(
    values: Iterable[float], top: float | None, min_step: float = 0.0
) -> tuple[float, float, float]:
    """The value axis: from zero (or below, for negative values) to a round
    number at or above the largest value; and its tick step (at least
    ``min_step``: counts tick at whole numbers)."""
    seen = list(values)
    high = max([0.0, *seen]) if top is None else top
    low = min([0.0, *seen])
    if high == low:
        high = low + 1
    step = max(_nice_step(high - low), min_step)
    return math.floor(low / step) * step, math.ceil(high / step) * step, step


class _Canvas:
    """The SVG under construction: a plot area and text helpers."""

    def __init__(self, title: str, width: int, height: int, names: Sequence[str]) -> None:
        self.width, self.height = width, height
        self.left = _LEFT
        self.legend_at = self._legend_layout(names, width - _RIGHT)
        rows = len({y for _, y in self.legend_at})
        self.top = _TOP + _LEGEND_ROW * (max(1, rows) - 1)
        self.right, self.bottom = width - _RIGHT, height - _BOTTOM
        self.parts: list[str] = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" style="{_FONT}">',
            f"<title>{escape(title)}</title>",
            f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
            self.text(width / 2, 22, title, size=16, anchor="middle", cls="chart-title"),
        ]

    @staticmethod
    def _legend_layout(names: Sequence[str], right: float) -> list[tuple[float, float]]:
        """Where each legend entry goes: left to right, wrapping to a new
        row (the widths are estimated: no font metrics without a renderer)."""
        places = []
        x, y = float(_LEFT), 44.0
        for name in names:
            needed = 16 + _CHAR_WIDTH * len(name)
            if x > _LEFT and x + needed > right:
                x, y = float(_LEFT), y + _LEGEND_ROW
            places.append((x, y))
            x += needed + 18
        return places

    @staticmethod
    def text(
        x: float,
        y: float,
        content: str,
        *,
        size: int = 11,
        anchor: str = "start",
        cls: str = "",
        extra: str = "",
    ) -> str:
        klass = f" class={quoteattr(cls)}" if cls else ""
        return (
            f'<text x="{x:.2f}" y="{y:.2f}" font-size="{size}" text-anchor="{anchor}"'
            f"{klass}{extra}>{escape(content)}</text>"
        )

    def value_axis(
        self, low: float, high: float, step: float, label: str, fmt: Callable[[float], str]
    ) -> Callable[[float], float]:
        """Grid lines and ticks of the value axis; returns value -> y."""

        def y_of(value: float) -> float:
            return self.bottom - (value - low) / (high - low) * (self.bottom - self.top)

        ticks = round((high - low) / step)
        for i in range(ticks + 1):
            value = low + i * step
            y = y_of(value)
            self.parts.append(
                f'<line x1="{self.left}" y1="{y:.2f}" x2="{self.right}" y2="{y:.2f}" '
                f'stroke="#dddddd" stroke-width="1"/>'
            )
            self.parts.append(
                self.text(self.left - 6, y + 4, fmt(value), size=10, anchor="end", cls="tick y")
            )
        mid = (self.top + self.bottom) / 2
        self.parts.append(
            self.text(
                18,
                mid,
                label,
                size=12,
                anchor="middle",
                cls="axis-label y",
                extra=f' transform="rotate(-90 18 {mid:.2f})"',
            )
        )
        return y_of

    def frame(self, x_label: str, zero_y: float) -> None:
        """The axes' lines (the category axis at zero) and the category axis' label."""
        self.parts.append(
            f'<line x1="{self.left}" y1="{self.top}" x2="{self.left}" y2="{self.bottom}" '
            f'stroke="#333333"/>'
        )
        self.parts.append(
            f'<line x1="{self.left}" y1="{zero_y:.2f}" x2="{self.right}" y2="{zero_y:.2f}" '
            f'stroke="#333333"/>'
        )
        if x_label:
            self.parts.append(
                self.text(
                    (self.left + self.right) / 2,
                    self.height - 12,
                    x_label,
                    size=12,
                    anchor="middle",
                    cls="axis-label x",
                )
            )

    def legend(self, names: Sequence[str]) -> None:
        """One swatch and name per series, in rows under the title (laid
        out when the canvas was made: the plot starts below them)."""
        self.parts.append('<g class="legend">')
        for i, (name, (x, y)) in enumerate(zip(names, self.legend_at, strict=True)):
            colour = PALETTE[i % len(PALETTE)]
            self.parts.append(f'<g class="legend-entry" data-series={quoteattr(name)}>')
            self.parts.append(
                f'<rect x="{x:.2f}" y="{y - 10:.2f}" width="12" height="12" fill="{colour}"/>'
            )
            self.parts.append(self.text(x + 16, y, name, size=11))
            self.parts.append("</g>")
        self.parts.append("</g>")

    def done(self) -> str:
        return "\n".join([*self.parts, "</svg>"]) + "\n"


def _check_lengths(series: Sequence[Series], length: int, what: str) -> None:
    if not series:
        raise ValueError("no series to draw")
    for s in series:
        if len(s.values) != length:
            raise ValueError(f"series {s.name!r} has {len(s.values)} values for {length} {what}")


class _Frame(NamedTuple):
    """What a bar chart and a histogram both take: the title, the series,
    the axes' labels and the size."""

    title: str
    series: Sequence[Series]
    x_label: str
    y_label: str
    width: int
    height: int


def bar_chart(
    *,
    title: str,
    categories: Sequence[str],
    series: Sequence[Series],
    y_label: str,
    x_label: str = "",
    y_max: float | None = None,
    counts: bool = False,
    value_format: Callable[[float], str] = readable_number,
    width: int = _WIDTH,
    height: int = _HEIGHT,
) -> str:
    """Grouped bars: one group per category, one bar per series in it,
    from zero. ``y_label`` names the values and their unit (``"grades per
    second"``); ``y_max`` fixes the axis' top (100 for percentages);
    ``counts`` ticks the axis at whole numbers only."""
    frame = _Frame(title, series, x_label, y_label, width, height)
    return _bars(frame, list(categories), None, y_max, value_format, counts=counts)


def histogram(
    *,
    title: str,
    edges: Sequence[float],
    series: Sequence[Series],
    x_label: str,
    y_label: str = "count",
    edge_format: Callable[[float], str] = readable_number,
    width: int = _WIDTH,
    height: int = _HEIGHT,
) -> str:
    """Counts per bin (each series' values are its counts, one per bin; see
    :func:`bin_counts`), bins labelled ``low-high`` in ``x_label``'s unit.
    Two series share each bin side by side, so two distributions compare on
    one set of bins."""
    if len(edges) < 2:
        raise ValueError("need at least two edges")
    labels = [f"{edge_format(a)}{_EN_DASH}{edge_format(b)}" for a, b in pairwise(edges)]
    frame = _Frame(title, series, x_label, y_label, width, height)
    return _bars(frame, labels, edges, None, readable_number, counts=True)


def _bars(
    frame: _Frame,
    labels: list[str],
    edges: Sequence[float] | None,
    y_max: float | None,
    value_format: Callable[[float], str],
    *,
    counts: bool,
) -> str:
    """Bars per label (``edges``: a histogram's bins, else categories)."""
    title, series, x_label, y_label, width, height = frame
    kind = "bar" if edges is None else "bin"
    _check_lengths(series, len(labels), "categories" if kind == "bar" else "bins")
    canvas = _Canvas(title, width, height, [s.name for s in series])
    low, high, step = _value_range((v for s in series for v in s.values), y_max, float(counts))
    y_of = canvas.value_axis(low, high, step, y_label, readable_number)
    slot = (canvas.right - canvas.left) / max(1, len(labels))
    gap = slot * (0.2 if kind == "bar" else 0.08)
    bar_w = (slot - gap) / len(series)
    zero = y_of(0.0)
    for c, label in enumerate(labels):
        x0 = canvas.left + c * slot + gap / 2
        for i, s in enumerate(series):
            value = s.values[c]
            x = x0 + i * bar_w
            top, bottom = sorted((y_of(value), zero))
            where = f" data-category={quoteattr(label)}"
            if edges is not None:
                where += f' data-low="{edges[c]!r}" data-high="{edges[c + 1]!r}"'
            shown = value_format(value)
            canvas.parts.append(
                f'<rect class="{kind}" data-series={quoteattr(s.name)}{where} '
                f'data-value="{value!r}" x="{x:.2f}" y="{top:.2f}" width="{bar_w:.2f}" '
                f'height="{bottom - top:.2f}" fill="{PALETTE[i % len(PALETTE)]}">'
                f"<title>{escape(f'{s.name}, {label}: {shown}')}</title></rect>"
            )
            label_y = top - 3 if value >= 0 else bottom + 11
            canvas.parts.append(
                canvas.text(x + bar_w / 2, label_y, shown, size=9, anchor="middle", cls="value")
            )
        canvas.parts.append(
            canvas.text(
                canvas.left + (c + 0.5) * slot,
                canvas.bottom + 16,
                label,
                size=10 if kind == "bar" else 9,
                anchor="middle",
                cls="tick x",
            )
        )
    canvas.frame(x_label, zero)
    canvas.legend([s.name for s in series])
    return canvas.done()


def _free_label_y(taken: list[float], points: Sequence[float], point_y: float) -> float:
    """Where a point's value label (9 px text, ``y`` its baseline) goes:
    above the point, else below it, else further up or down, clear of the
    labels already placed at the same x and of the other points there
    (lines that meet would print their values on top of each other)."""
    steps = (-7.0, 14.0, -19.0, 26.0, -31.0, 38.0, -43.0, 50.0)

    def clear(y: float) -> bool:
        return all(abs(y - other) >= 11 for other in taken) and all(
            not (y - 12 <= p <= y + 4) for p in points if p != point_y
        )

    for step in steps:
        if clear(point_y + step):
            taken.append(point_y + step)
            return point_y + step
    taken.append(point_y - 7)
    return point_y - 7


def line_chart(
    *,
    title: str,
    x_values: Sequence[float],
    series: Sequence[Series],
    x_label: str,
    y_label: str,
    log_x: bool = False,
    value_format: Callable[[float], str] = readable_number,
    width: int = _WIDTH,
    height: int = _HEIGHT,
) -> str:
    """One line per series over shared x values (sizes, concurrencies), the
    value axis from zero, each point labelled with its value. Points sit at
    their x (on a log2 scale with ``log_x``, for sizes that double), with a
    tick at each x given."""
    _check_lengths(series, len(x_values), "x values")
    if not x_values:
        raise ValueError("no x values")
    if log_x and min(x_values) <= 0:
        raise ValueError("a log scale needs x values above zero")
    canvas = _Canvas(title, width, height, [s.name for s in series])
    low, high, step = _value_range((v for s in series for v in s.values), None)
    y_of = canvas.value_axis(low, high, step, y_label, readable_number)
    xs = [math.log2(x) if log_x else float(x) for x in x_values]
    first, last = min(xs), max(xs)
    span = last - first or 1.0
    pad = 24

    def x_of(position: float) -> float:
        return (
            canvas.left + pad + (position - first) / span * (canvas.right - canvas.left - 2 * pad)
        )

    for x, position in zip(x_values, xs, strict=True):
        canvas.parts.append(
            canvas.text(
                x_of(position), canvas.bottom + 16, readable_number(x), size=10,
                anchor="middle", cls="tick x",
            )
        )  # fmt: skip
    labels_at: dict[float, list[float]] = {}  # the value labels placed at each x
    points_at = {
        x: [y_of(s.values[k]) for s in series] for k, x in enumerate(x_values)
    }  # fmt: skip
    for i, s in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        points = [(x_of(p), y_of(v)) for p, v in zip(xs, s.values, strict=True)]
        path = " ".join(f"{x:.2f},{y:.2f}" for x, y in points)
        canvas.parts.append(
            f'<polyline class="line" data-series={quoteattr(s.name)} points="{path}" '
            f'fill="none" stroke="{colour}" stroke-width="2"/>'
        )
        for x_value, (x, y), value in zip(x_values, points, s.values, strict=True):
            shown = value_format(value)
            canvas.parts.append(
                f'<circle class="point" data-series={quoteattr(s.name)} data-x="{x_value!r}" '
                f'data-value="{value!r}" cx="{x:.2f}" cy="{y:.2f}" r="3.5" fill="{colour}">'
                f"<title>{escape(f'{s.name}, {readable_number(x_value)}: {shown}')}</title>"
                "</circle>"
            )
            label_y = _free_label_y(labels_at.setdefault(x_value, []), points_at[x_value], y)
            canvas.parts.append(
                canvas.text(
                    x, label_y, shown, size=9, anchor="middle", cls="value",
                    extra=f' fill="{colour}"',
                )
            )  # fmt: skip
    canvas.frame(x_label, y_of(0.0))
    canvas.legend([s.name for s in series])
    return canvas.done()
