"""The summary of a graded file: pass rate and mean reward per data source.

It is computed from the output file as it stands at the end (with the rows
earlier runs graded), matched to the input's rows, so that it describes the
file the user keeps, not only what the last run added.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from .results import INVALID
from .rows import InputRow, RowProblem, id_key

__all__ = ["NO_SOURCE", "SourceTally", "Summary", "render_summary", "summarize"]

#: The label of rows without a ``data_source``.
NO_SOURCE = "(none)"


@dataclass
class SourceTally:
    """The counts of one data source (or of the whole file)."""

    rows: int = 0  #: input rows, valid or not
    graded: int = 0  #: rows with a reward
    passed: int = 0  #: verdict "passed"
    reward_sum: float = 0.0
    infra_errors: int = 0  #: rows written flagged (reward null)
    invalid: int = 0  #: rows that could not be read

    @property
    def not_graded(self) -> int:
        """Rows with no record at all (interrupted, or infra errors not written)."""
        return self.rows - self.graded - self.infra_errors - self.invalid

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.graded if self.graded else None

    @property
    def mean_reward(self) -> float | None:
        return self.reward_sum / self.graded if self.graded else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "graded": self.graded,
            "passed": self.passed,
            "pass_rate": self.pass_rate,
            "mean_reward": self.mean_reward,
            "infra_errors": self.infra_errors,
            "invalid": self.invalid,
            "not_graded": self.not_graded,
        }


@dataclass
class Summary:
    by_source: dict[str, SourceTally] = field(default_factory=dict)
    total: SourceTally = field(default_factory=SourceTally)

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.total.as_dict(),
            "by_data_source": {k: v.as_dict() for k, v in sorted(self.by_source.items())},
        }


def summarize(
    rows: Sequence[InputRow],
    problems: Sequence[RowProblem],
    records: Sequence[Mapping[str, Any]],
) -> Summary:
    """Tally every input row by what the output says about it."""
    by_key: dict[str, Mapping[str, Any]] = {}
    for written in records:
        if written.get("verdict") != INVALID and "id" in written:
            by_key[id_key(written["id"])] = written
    summary = Summary()

    def tally(source: str | None) -> list[SourceTally]:
        label = source if source is not None else NO_SOURCE
        return [summary.by_source.setdefault(label, SourceTally()), summary.total]

    for row in rows:
        record: Mapping[str, Any] | None = by_key.get(row.key)
        reward = record.get("reward") if record is not None else None
        for t in tally(row.data_source):
            t.rows += 1
            if record is None:
                continue
            if record.get("infra_error"):
                t.infra_errors += 1
            elif isinstance(reward, (int, float)) and not isinstance(reward, bool):
                t.graded += 1
                t.reward_sum += float(reward)
                t.passed += record.get("verdict") == "passed"
    for problem in problems:
        for t in tally(problem.data_source):
            t.rows += 1
            t.invalid += 1
    return summary


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _table(summary: Summary) -> tuple[list[str], list[list[str]]]:
    header = ["data_source", "rows", "graded", "pass rate", "mean reward", "infra errors"]
    show_missing = summary.total.not_graded > 0
    show_invalid = summary.total.invalid > 0
    if show_missing:
        header.append("not graded")
    if show_invalid:
        header.append("invalid")
    lines: list[list[str]] = []
    items = sorted(summary.by_source.items())
    if len(items) > 1:
        items.append(("total", summary.total))
    for label, t in items:
        line = [
            label,
            str(t.rows),
            str(t.graded),
            _pct(t.pass_rate),
            _num(t.mean_reward),
            str(t.infra_errors),
        ]
        if show_missing:
            line.append(str(t.not_graded))
        if show_invalid:
            line.append(str(t.invalid))
        lines.append(line)
    return header, lines


def render_summary(summary: Summary, out: IO[str], *, use_rich: bool = True) -> None:
    """The table, with rich when it is installed (and wanted), else plain text."""
    header, lines = _table(summary)
    if use_rich:
        try:
            from rich.console import Console
            from rich.table import Table
        except ImportError:
            pass
        else:
            table = Table(title="collimate grade")
            for i, name in enumerate(header):
                table.add_column(name, justify="left" if i == 0 else "right")
            totalled = len(summary.by_source) > 1  # the last line is the total
            for n, line in enumerate(lines):
                table.add_row(*line, end_section=totalled and n == len(lines) - 2)
            # a log or a pipe gets the whole table, not one cut to 80 columns
            Console(file=out, width=None if out.isatty() else 200).print(table)
            return
    widths = [max(len(r[c]) for r in [header, *lines]) for c in range(len(header))]
    for r in [header, *lines]:
        cells = [r[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True)
        ]
        print("  ".join(cells).rstrip(), file=out)
