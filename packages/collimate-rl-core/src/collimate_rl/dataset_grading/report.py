"""``collimate grade --report FILE.html``: the summary as a page to look at.

The same tallies as the summary table (:mod:`.summary`), drawn: the pass
rate per data source, each source's rows by outcome, and the rewards'
histogram, over a table of the figures. Rows hit by infrastructure errors
have no reward; they are counted in a column and a series of their own,
never as wrong answers, and are left out of pass rates and the histogram
(their candidates were not judged).

The page is one self-contained file: the charts are inline SVG
(:mod:`collimate_rl.reports.svg_chart`), the style is inline, and there is
no script and nothing fetched from anywhere, so it opens the same offline,
attached to an issue or archived beside the results.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from ..reports.svg_chart import Series, bar_chart, bin_counts, even_edges, histogram
from .summary import NO_SOURCE, SourceTally, Summary

__all__ = ["ReportContext", "render_report", "write_report"]

#: Bins of the rewards' histogram (over [0, 1], widened to hold any reward
#: outside it).
REWARD_BINS = 10

_STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 980px; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border-bottom: 1px solid #ddd; padding: 4px 10px; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.total td { font-weight: bold; border-top: 2px solid #333; }
figure { margin: 1.5em 0; overflow-x: auto; }
figcaption { font-size: 0.9em; color: #555; max-width: 720px; }
.note { color: #555; }
"""


@dataclass(frozen=True)
class ReportContext:
    """What the page says about the run besides the tallies."""

    input_name: str  #: the graded file, as given
    output_name: str  #: the results file
    exit_code: int
    interrupted: bool
    generated_at: str  #: when the page was written (ISO 8601, UTC)


def _label(source: str, ctx: ReportContext) -> str:
    """A data source's name; rows without one go by the dataset's file name."""
    return Path(ctx.input_name).name if source == NO_SOURCE else source


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _failed(t: SourceTally) -> int:
    """Rows graded and not passed: wrong, or only partly right."""
    return t.graded - t.passed


class _Column(NamedTuple):
    """A column of the table: the cell's field, its header, and whether it
    holds a number (aligned right)."""

    field: str
    title: str
    numeric: bool


_COLUMNS: tuple[_Column, ...] = (
    _Column("source", "data source", False),
    _Column("rows", "rows", True),
    _Column("graded", "graded", True),
    _Column("passed", "passed", True),
    _Column("pass_rate", "pass rate", True),
    _Column("mean_reward", "mean reward", True),
    _Column("failed", "failed (graded, not passed)", True),
    _Column("infra_errors", "infra errors (no reward)", True),
    _Column("invalid", "invalid rows", True),
    _Column("not_graded", "not graded", True),
    _Column("top_failure", "top first failure", False),
)


def _cells(label: str, t: SourceTally) -> dict[str, str]:
    return {
        "source": label,
        "rows": str(t.rows),
        "graded": str(t.graded),
        "passed": str(t.passed),
        "pass_rate": _pct(t.pass_rate),
        "mean_reward": _num(t.mean_reward),
        "failed": str(_failed(t)),
        "infra_errors": str(t.infra_errors),
        "invalid": str(t.invalid),
        "not_graded": str(t.not_graded),
        "top_failure": t.top_failure or "-",
    }


def _table(sources: Sequence[tuple[str, SourceTally]], total: SourceTally) -> str:
    head = "".join(
        f'<th class="{"num" if c.numeric else "text"}">{html.escape(c.title)}</th>'
        for c in _COLUMNS
    )
    lines = [f"<table><thead><tr>{head}</tr></thead><tbody>"]
    rows = [(label, t, f" data-source={_attr(label)}") for label, t in sources]
    if len(sources) > 1:  # marked apart: a data source may be called "total"
        rows.append(("total", total, ' class="total" data-total="true"'))
    for label, t, marks in rows:
        cells = _cells(label, t)
        tds = "".join(
            f'<td class="{"num" if c.numeric else "text"}" data-field="{c.field}">'
            f"{html.escape(cells[c.field])}</td>"
            for c in _COLUMNS
        )
        lines.append(f"<tr{marks}>{tds}</tr>")
    lines.append("</tbody></table>")
    return "\n".join(lines)


def _attr(text: str) -> str:
    return '"' + html.escape(text, quote=True) + '"'


def _reward_edges(rewards: Sequence[float]) -> tuple[float, ...]:
    """[0, 1] in equal bins, widened to hold any reward outside it."""
    low = min([0.0, *rewards])
    high = max([1.0, *rewards])
    return even_edges(low, high, REWARD_BINS)


def _figure(svg: str, caption: str) -> str:
    return f"<figure>\n{svg}<figcaption>{html.escape(caption)}</figcaption>\n</figure>"


def _width(labels: Sequence[str]) -> int:
    """A chart wide enough that its data sources' names do not run into
    each other (about 6 px a character of a 10 px label), 720 px at least."""
    slot = max(64.0, 6.2 * max((len(label) for label in labels), default=0) + 12)
    return max(720, round(102 + slot * len(labels)))


def _charts(sources: Sequence[tuple[str, SourceTally]], total: SourceTally) -> list[str]:
    labels = [label for label, _ in sources]
    width = _width(labels)
    figures = [
        _figure(
            bar_chart(
                title="Pass rate per data source",
                categories=labels,
                series=[Series("pass rate", [100 * (t.pass_rate or 0.0) for _, t in sources])],
                y_label="rows passed (% of graded rows)",
                x_label="data source",
                y_max=100.0,
                value_format=lambda v: f"{v:.1f}%",
                width=width,
            ),
            "Passed rows over graded rows. Rows hit by infrastructure errors and invalid "
            "rows have no reward and are not in the denominator (a source with no graded "
            "row shows 0%: see the table).",
        )
    ]
    outcomes: list[tuple[str, list[int]]] = [
        ("passed", [t.passed for _, t in sources]),
        ("failed (wrong or partly right)", [_failed(t) for _, t in sources]),
        ("infra error (no reward)", [t.infra_errors for _, t in sources]),
    ]
    if total.invalid:
        outcomes.append(("invalid row", [t.invalid for _, t in sources]))
    if total.not_graded:
        outcomes.append(("not graded yet", [t.not_graded for _, t in sources]))
    figures.append(
        _figure(
            bar_chart(
                title="Rows by outcome per data source",
                categories=labels,
                series=[Series(name, counts) for name, counts in outcomes],
                y_label="rows",
                x_label="data source",
                counts=True,
                width=width,
            ),
            "Every input row in one outcome. Infrastructure errors are the grader's failures, "
            "not the candidates': a rerun of the same command grades those rows again.",
        )
    )
    edges = _reward_edges(total.rewards)
    figures.append(
        _figure(
            histogram(
                title="Rewards of the graded rows",
                edges=edges,
                series=[Series("graded rows", bin_counts(total.rewards, edges))],
                x_label="reward (bins of equal width; the last holds its upper edge)",
                y_label="rows",
            ),
            f"{len(total.rewards)} graded rows. Rows without a reward (infrastructure "
            "errors, invalid, not graded) are not drawn.",
        )
    )
    return figures


def render_report(summary: Summary, ctx: ReportContext) -> str:
    """The HTML page: headline figures, the charts, the table."""
    sources = [(_label(name, ctx), t) for name, t in sorted(summary.by_source.items())]
    total = summary.total
    title = f"collimate grade: {Path(ctx.input_name).name}"
    status = "interrupted" if ctx.interrupted else f"exit code {ctx.exit_code}"
    headline = (
        f"{total.rows} rows: {total.graded} graded, {total.passed} passed "
        f"({_pct(total.pass_rate)} of graded), mean reward {_num(total.mean_reward)}; "
        f"{total.infra_errors} infra errors, {total.invalid} invalid, "
        f"{total.not_graded} not graded."
    )
    body = [
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="note">Input {html.escape(ctx.input_name)}, results '
        f"{html.escape(ctx.output_name)}; {html.escape(status)}; written "
        f"{html.escape(ctx.generated_at)}.</p>",
        f'<p class="headline">{html.escape(headline)}</p>',
        *(
            [
                '<p class="note">Rows without a result because of the infrastructure are '
                "graded by running the same command again.</p>"
            ]
            if total.infra_errors or total.not_graded
            else []
        ),
        *(_charts(sources, total) if total.rows else ["<p>The input has no rows.</p>"]),
        "<h2>Per data source</h2>",
        _table(sources, total),
    ]
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


def write_report(path: Path, summary: Summary, ctx: ReportContext) -> None:
    """Write the page to ``path`` (replaced when it exists)."""
    path.write_text(render_report(summary, ctx), encoding="utf-8")
