"""The summary of a graded file: pass rate and mean reward per data source,
and the most common first failure of the rows that failed.

It is computed from the output file as it stands at the end (with the rows
earlier runs graded), matched to the input's rows, so that it describes the
file the user keeps, not only what the last run added. A failed row's first
failure is its record's ``reason`` (``wrong_answer``, ``error: NameError``,
``did not load: SyntaxError``, ...; see :func:`.results.first_failure`):
a data source whose rows all fail to load says so in the table.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from .results import INVALID
from .rows import InputRow, RowProblem, id_key

__all__ = ["NO_SOURCE", "SourceTally", "Summary", "render_summary", "summarize"]

#: The label of rows without a ``data_source``.
NO_SOURCE = "(none)"
#: First failures listed per data source in the JSON summary.
TOP_FAILURES = 3


@dataclass
class SourceTally:
    """The counts of one data source (or of the whole file)."""

    rows: int = 0  #: input rows, valid or not
    graded: int = 0  #: rows with a reward
    passed: int = 0  #: verdict "passed"
    reward_sum: float = 0.0
    infra_errors: int = 0  #: rows written flagged (reward null)
    invalid: int = 0  #: rows that could not be read
    #: failed rows per first-failure reason (the records' ``reason``)
    failures: Counter[str] = field(default_factory=Counter)
    #: the graded rows' rewards, in input order (the report's histogram)
    rewards: list[float] = field(default_factory=list)

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

    @property
    def top_failure(self) -> str | None:
        """``"wrong_answer (12)"``: the most common first failure and its rows."""
        if not self.failures:
            return None
        reason, rows = self.failures.most_common(1)[0]
        if len(reason) > _REASON_WIDTH:
            reason = reason[: _REASON_WIDTH - 3] + "..."
        return f"{reason} ({rows})"

    def as_dict(self) -> dict[str, Any]:
        shown: dict[str, Any] = {name: getattr(self, name) for name in _SHOWN}
        shown["first_failures"] = dict(self.failures.most_common(TOP_FAILURES))
        return shown


#: What a tally's ``as_dict`` shows, in order (then its first failures).
_SHOWN = (
    "rows", "graded", "passed", "pass_rate", "mean_reward", "infra_errors", "invalid", "not_graded",
)  # fmt: skip


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
                t.rewards.append(float(reward))
                t.passed += record.get("verdict") == "passed"
                reason = record.get("reason")
                if record.get("verdict") != "passed" and isinstance(reason, str):
                    t.failures[reason] += 1
    for problem in problems:
        for t in tally(problem.data_source):
            t.rows += 1
            t.invalid += 1
    return summary


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


#: Columns of text, left-aligned (the others are numbers).
_TEXT = frozenset({"top first failure"})
#: A first-failure reason longer than this is cut in the table.
_REASON_WIDTH = 40


def _table(summary: Summary) -> tuple[list[str], list[list[str]]]:
    header = ["data_source", "rows", "graded", "pass rate", "mean reward", "infra errors"]
    show_missing = summary.total.not_graded > 0
    show_invalid = summary.total.invalid > 0
    show_failure = bool(summary.total.failures)
    if show_missing:
        header.append("not graded")
    if show_invalid:
        header.append("invalid")
    if show_failure:
        header.append("top first failure")
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
        if show_failure:
            line.append(t.top_failure or "-")
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
                table.add_column(name, justify="left" if i == 0 or name in _TEXT else "right")
            totalled = len(summary.by_source) > 1  # the last line is the total
            for n, line in enumerate(lines):
                table.add_row(*line, end_section=totalled and n == len(lines) - 2)
            # a log or a pipe gets the whole table, not one cut to 80 columns
            Console(file=out, width=None if out.isatty() else 200).print(table)
            return
    widths = [max(len(r[c]) for r in [header, *lines]) for c in range(len(header))]
    left = [i == 0 or name in _TEXT for i, name in enumerate(header)]
    for r in [header, *lines]:
        cells = [
            c.ljust(w) if is_left else c.rjust(w)
            for c, w, is_left in zip(r, widths, left, strict=True)
        ]
        print("  ".join(cells).rstrip(), file=out)
