"""The output JSONL of ``collimate grade``: records, the writer, resuming.

One line per input row, a JSON object::

    {"id": 17, "line": 17, "data_source": "apps", "reward": 0.5,
     "verdict": "failed", "passed": 2, "total": 4, "seed": "...",
     "seed_ack": "verified", "infra_error": false, "error": null,
     "reason": "wrong_answer",
     "explain": "failed 0.5; 2/4 tests passed; first failure: test 1 wrong_answer: got 3",
     "template": "dkr-python311", "input_sha": "3f9c..."}

``line`` is the row's line number in a JSONL input, its row number in a
Parquet one. ``reason`` is the first failure's kind (``wrong_answer``,
``error: NameError``, ``timeout``, ``did not load: SyntaxError``; null
when the row passed or has no reward), what the summary tallies;
``explain`` is :meth:`~collimate_rl.GradeResult.explain`'s line.

Three promises, each kept here:

* **Every complete line is a valid result at any moment.** A record is
  appended with one ``write`` of the whole line to a descriptor opened with
  ``O_APPEND``: a Ctrl-C or a kill leaves complete lines, and at worst
  (a hard kill inside that write) one torn last line, which a rerun detects
  and drops.
* **An infrastructure failure is never a reward.** Its record says
  ``"infra_error": true, "reward": null``, and a rerun grades the row again.
* **A rerun finishes the file, for the same input only.** Each record
  carries ``input_sha``, a hash of what was graded (code, ground truth,
  entry): a rerun skips the rows already graded and refuses a file that was
  graded from other rows (or on another template) rather than mixing them.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ..grading import GradeResult
from .rows import InputRow, RowProblem, id_key

__all__ = [
    "RECORD_FIELDS",
    "ExistingOutput",
    "OutputMismatchError",
    "ResultWriter",
    "ResumePlan",
    "first_failure",
    "infra_record",
    "invalid_record",
    "load_existing",
    "plan_resume",
    "read_records",
    "result_record",
    "rewrite_records",
]

#: The keys of every record, in the order they are written.
RECORD_FIELDS = (
    "id",
    "line",
    "data_source",
    "reward",
    "verdict",
    "passed",
    "total",
    "seed",
    "seed_ack",
    "infra_error",
    "error",
    "reason",
    "explain",
    "template",
    "input_sha",
)
#: The verdict of a row that could not be read (``--skip-invalid``).
INVALID = "invalid"


class OutputMismatchError(Exception):
    """The output file holds results that are not this input's (or not ours)."""


def _count(detail: Mapping[str, Any], name: str) -> int | None:
    value = detail.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


_EXCEPTION: Final = re.compile(r"\b([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt))\b")


def _exception_name(message: Any) -> str | None:
    found = _EXCEPTION.search(str(message or ""))
    return found.group(1) if found else None


def first_failure(result: GradeResult) -> str | None:
    """The kind of a failed grade's first failure, short enough to count
    across rows: ``wrong_answer``, ``error: NameError``, ``timeout``,
    ``memory_error``, ``did not load: SyntaxError``; None for a pass or an
    infrastructure error."""
    if result.infra_error or result.passed:
        return None
    detail = result.detail
    load_error = detail.get("load_error")
    if load_error:
        name = _exception_name(load_error) or ("timeout" if detail.get("timeout") else None)
        return f"did not load: {name}" if name else "did not load"
    failed = detail.get("failed")
    if isinstance(failed, list) and failed and isinstance(failed[0], Mapping):
        reason = str(failed[0].get("reason") or "failed")
        if reason == "error":
            name = _exception_name(failed[0].get("message"))
            return f"error: {name}" if name else reason
        return reason
    if detail.get("timeout"):
        return "timeout"
    return "failed"


def result_record(row: InputRow, result: GradeResult, template: str) -> dict[str, Any]:
    """The record of a graded row (a task outcome: pass, fail or partial)."""
    if result.infra_error:
        return infra_record(row, result, template)
    return {
        "id": row.id,
        "line": row.line,
        "data_source": row.data_source,
        "reward": result.reward,
        "verdict": result.verdict,
        "passed": _count(result.detail, "passed"),
        "total": _count(result.detail, "total"),
        "seed": result.seed,
        "seed_ack": result.seed_ack,
        "infra_error": False,
        "error": None,
        "reason": first_failure(result),
        "explain": result.explain(),
        "template": template,
        "input_sha": row.input_sha,
    }


def infra_record(row: InputRow, result: GradeResult | None, template: str) -> dict[str, Any]:
    """The record of a row no reward could be computed for: flagged, reward null
    (a 0.0 here would be read as a wrong answer and trained on)."""
    return {
        "id": row.id,
        "line": row.line,
        "data_source": row.data_source,
        "reward": None,
        "verdict": "infra_error",
        "passed": None,
        "total": None,
        "seed": result.seed if result is not None else None,
        "seed_ack": result.seed_ack if result is not None else None,
        "infra_error": True,
        "error": (result.error if result is not None else None) or "infrastructure error",
        "reason": None,
        "explain": None,
        "template": template,
        "input_sha": row.input_sha,
    }


def invalid_record(problem: RowProblem, template: str) -> dict[str, Any]:
    """The record of a row that could not be read (written with ``--skip-invalid``)."""
    return {
        "id": problem.id if problem.id is not None else problem.line,
        "line": problem.line,
        "data_source": problem.data_source,
        "reward": None,
        "verdict": INVALID,
        "passed": None,
        "total": None,
        "seed": None,
        "seed_ack": None,
        "infra_error": False,
        "error": problem.message,
        "reason": None,
        "explain": None,
        "template": template,
        "input_sha": None,
    }


def _encode(record: Mapping[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def rewrite_records(path: Path, records: Iterable[Mapping[str, Any]]) -> None:
    """Replace ``path`` with ``records``, atomically: a reader (or a crash)
    sees the old file or the new one, never half of either."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            _write_all(fd, b"".join(_encode(r) for r in records))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    try:  # make the rename itself durable (best effort: not every FS allows it)
        dir_fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


class ResultWriter:
    """Appends records to the output, each in one write of the whole line.

    ``start`` replaces the file's content first (atomically): ``[]`` starts
    over, a resume plan's ``keep`` drops the records a rerun regrades. The
    writer is safe to call from several threads.
    """

    def __init__(self, path: str | Path, *, start: Sequence[Mapping[str, Any]] | None = None):
        self.path = Path(path)
        if start is not None:
            rewrite_records(self.path, start)
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()
        self.written = 0

    def write(self, record: Mapping[str, Any]) -> None:
        data = _encode(record)
        with self._lock:
            if self._fd is None:
                raise ValueError("the result writer is closed")
            _write_all(self._fd, data)
            self.written += 1

    def sync(self) -> None:
        """Make what was written durable (a chunk boundary, the end)."""
        with self._lock:
            if self._fd is not None:
                os.fsync(self._fd)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                fd, self._fd = self._fd, None
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)

    def __enter__(self) -> ResultWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


@dataclass
class ExistingOutput:
    """What an earlier run left in the output file."""

    records: list[dict[str, Any]] = field(default_factory=list)
    #: bytes of a last line without its newline (a hard kill mid-write), dropped
    torn_bytes: int = 0


def load_existing(path: str | Path) -> ExistingOutput:
    """Read an output file back. A torn last line is dropped (and measured);
    any other line that is not one of our records means the file is not a
    ``collimate grade`` output, which is refused rather than appended to."""
    p = Path(path)
    data = p.read_bytes()
    out = ExistingOutput()
    if not data:
        return out
    lines = data.split(b"\n")
    last = lines.pop()  # after the final newline: b"" unless the last line is torn
    if last:
        out.torn_bytes = len(last)
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except ValueError as exc:
            raise OutputMismatchError(
                f"{p}: line {number} is not JSON ({exc}); this file was not written by "
                "collimate grade (or was edited): use --overwrite or another -o"
            ) from None
        if not isinstance(record, dict) or "id" not in record or "verdict" not in record:
            raise OutputMismatchError(
                f"{p}: line {number} is not a collimate grade result (no 'id' or 'verdict'); "
                "use --overwrite or another -o"
            )
        out.records.append(record)
    return out


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """Every complete record of an output file (a torn last line left out)."""
    return load_existing(path).records


@dataclass
class ResumePlan:
    """What a rerun keeps, and what it grades again."""

    keep: list[dict[str, Any]] = field(default_factory=list)  #: graded rows, file order
    done: set[str] = field(default_factory=set)  #: their id keys
    infra_retried: int = 0  #: flagged rows dropped to be graded again
    invalid_dropped: int = 0  #: invalid-row records dropped (rows are read again)
    duplicates: int = 0
    torn_bytes: int = 0

    @property
    def rewrite(self) -> bool:
        """Whether the file must be rewritten before appending (something dropped)."""
        return bool(
            self.infra_retried or self.invalid_dropped or self.duplicates or self.torn_bytes
        )


def plan_resume(
    existing: ExistingOutput,
    rows: Iterable[InputRow],
    template: str,
    *,
    output_name: str = "the output",
    input_name: str = "the input",
) -> ResumePlan:
    """Match an earlier run's records to this input. Raises
    :class:`OutputMismatchError` (naming the first few rows at fault) when a
    record is not a result of one of this input's rows as they are now, or
    was graded on another template: appending to it would mix two runs."""
    by_key = {row.key: row for row in rows}
    plan = ResumePlan(torn_bytes=existing.torn_bytes)
    kept: dict[str, dict[str, Any]] = {}
    flagged: set[str] = set()
    flagged_records = 0
    wrong: list[str] = []
    for record in existing.records:
        if record.get("verdict") == INVALID:
            plan.invalid_dropped += 1
            continue
        key = id_key(record["id"])
        row = by_key.get(key)
        if row is None:
            wrong.append(f"id {record['id']!r} is not a valid row of {input_name}")
            continue
        if record.get("input_sha") != row.input_sha:
            wrong.append(
                f"id {record['id']!r} ({input_name} {row.unit} {row.line}) changed since it was "
                "graded (code, ground truth or entry)"
            )
            continue
        if record.get("template") != template:
            wrong.append(
                f"id {record['id']!r} was graded on template {record.get('template')!r}, "
                f"this run grades on {template!r}"
            )
            continue
        if record.get("infra_error"):
            flagged.add(key)
            flagged_records += 1
            continue
        if key in kept:
            plan.duplicates += 1
        kept[key] = record
    if wrong:
        more = f" (and {len(wrong) - 3} more)" if len(wrong) > 3 else ""
        raise OutputMismatchError(
            f"{output_name} holds results that do not belong to {input_name}: "
            + "; ".join(wrong[:3])
            + more
            + ". Use --overwrite to start over, or another -o."
        )
    plan.infra_retried = len(flagged - kept.keys())
    plan.duplicates += flagged_records - plan.infra_retried  # flags a later grade superseded
    plan.keep = list(kept.values())
    plan.done = set(kept)
    return plan
