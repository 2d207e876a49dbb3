"""Reading the input JSONL of ``collimate grade``: every row validated up front.

A row is one candidate to grade. Its fields are looked up the way the
datasets in the wild spell them, so that a SkyRL, verl or plain file needs
no conversion:

* the code: ``code`` (taken as is), else ``completion`` or ``response``
  (a model's text, or a chat transcript whose last assistant message is
  taken), which go through :func:`~collimate_rl.extract_code`;
* the ground truth: ``ground_truth``, else ``reward_spec.ground_truth``
  (SkyRL), else ``reward_model.ground_truth`` (verl), in any shape a
  registered reward kind accepts;
* ``entry`` (the function to call; default ``solve``), ``data_source``;
* the id: ``id``, else the line number (1-based);
* the CRN group: ``group``, ``uid``, ``prompt_id`` or ``prompt``, the first
  one present (every row of a group gets the same seed).

Every row is checked before the first grade (JSON, code, ground truth, a
reward kind that accepts it, unique ids): finding the typo on line 90,000
after an hour of grading is the failure this module exists to prevent.
Problems are collected (with their line numbers), not raised, so the caller
can list them all at once.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pluggy

from ..rewards.extract import extract_code
from ..rewards.registry import reward_spec_from_ground_truth
from ..rewards.spec import RewardSpec

__all__ = [
    "DEFAULT_GROUP_FIELDS",
    "InputRow",
    "ReadResult",
    "RowId",
    "RowOptions",
    "RowProblem",
    "canonical_json",
    "id_key",
    "read_rows",
]

RowId = str | int

#: Tried in this order when ``--group-field`` is not given.
DEFAULT_GROUP_FIELDS: Final = ("group", "uid", "prompt_id", "prompt")
#: Fields whose text is a model completion (goes through ``extract_code``).
COMPLETION_FIELDS: Final = ("completion", "response")
#: Where ground truths live when ``--ground-truth-field`` is not given:
#: plain rows, SkyRL rows, verl rows.
GROUND_TRUTH_PATHS: Final = (
    "ground_truth",
    "reward_spec.ground_truth",
    "reward_model.ground_truth",
)

_MISSING: Final = object()


def canonical_json(value: Any) -> str:
    """One spelling per JSON value (sorted keys, no spaces), for keys and hashes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def id_key(row_id: Any) -> str:
    """The key a row id is matched by: ``7`` and ``"7"`` are different ids."""
    return canonical_json(row_id)


@dataclass(frozen=True)
class RowOptions:
    """How rows are read. Field names may be dotted paths (``meta.gt``)."""

    ground_truth_field: str | None = None
    code_field: str | None = None
    completion_field: str | None = None
    group_field: str | None = None
    id_field: str = "id"
    entry: str = "solve"


@dataclass(frozen=True)
class InputRow:
    """One valid row, ready to grade."""

    line: int  #: 1-based line number in the input file
    id: RowId
    key: str  #: :func:`id_key` of ``id``
    code: str
    ground_truth: Any
    entry: str
    spec_key: str  #: equal for rows whose ground truth and entry are equal (one spec)
    data_source: str | None
    group: str | None  #: the CRN group key, or None (the row is a group of its own)
    input_sha: str  #: what the output records, so a rerun can tell the input changed


@dataclass(frozen=True)
class RowProblem:
    """A row that cannot be graded, and why."""

    line: int
    message: str
    id: RowId | None = None
    data_source: str | None = None

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


@dataclass
class ReadResult:
    """The valid rows (in file order), the problems, and one spec per ``spec_key``."""

    rows: list[InputRow] = field(default_factory=list)
    problems: list[RowProblem] = field(default_factory=list)
    specs: dict[str, RewardSpec] = field(default_factory=dict)
    lines: int = 0  #: lines read, blank ones included


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


def _code(row: Mapping[str, Any], opts: RowOptions, entry: str) -> str:
    if opts.code_field is not None:
        value = _lookup(row, opts.code_field)
        if value is _MISSING:
            raise _RowError(f"no code: the row has no {opts.code_field!r} field")
        if not isinstance(value, str):
            raise _RowError(f"{opts.code_field!r} must be a string, got {type(value).__name__}")
        return value
    if opts.completion_field is not None:
        value = _lookup(row, opts.completion_field)
        if value is _MISSING:
            raise _RowError(f"no completion: the row has no {opts.completion_field!r} field")
        return extract_code(completion_text(value, opts.completion_field), entry)
    if "code" in row and row["code"] is not None:
        if not isinstance(row["code"], str):
            raise _RowError(f"'code' must be a string, got {type(row['code']).__name__}")
        return row["code"]
    for name in COMPLETION_FIELDS:
        if name in row and row[name] is not None:
            return extract_code(completion_text(row[name], name), entry)
    raise _RowError("no code: expected a 'code', 'completion' or 'response' field")


def _ground_truth(row: Mapping[str, Any], opts: RowOptions) -> Any:
    paths = (opts.ground_truth_field,) if opts.ground_truth_field else GROUND_TRUTH_PATHS
    for path in paths:
        value = _lookup(row, path)
        if value is not _MISSING and value is not None:
            return value
    if opts.ground_truth_field:
        raise _RowError(f"no ground truth: the row has no {opts.ground_truth_field!r} field")
    raise _RowError(
        "no ground truth: expected 'ground_truth' (or 'reward_spec.ground_truth', "
        "'reward_model.ground_truth'; --ground-truth-field names another)"
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
    return value if isinstance(value, str) else canonical_json(value)


def _row_id(row: Mapping[str, Any], opts: RowOptions, line: int) -> RowId:
    value = _lookup(row, opts.id_field)
    if value is _MISSING or value is None:
        return line
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise _RowError(f"{opts.id_field!r} must be a string or an integer, got {value!r:.60}")
    return value


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    with path.open("rb") as f:
        yield from enumerate(f, start=1)


class _SpecCache:
    """One reward spec per distinct (ground truth, entry): a dataset repeats
    each prompt's ground truth for every sampled completion."""

    def __init__(self, pm: pluggy.PluginManager | None) -> None:
        self.pm = pm
        self.specs: dict[str, RewardSpec] = {}
        self.errors: dict[str, str] = {}

    def key_for(self, ground_truth: Any, entry: str) -> str:
        key = canonical_json([ground_truth, entry])
        if key in self.specs:
            return key
        if key not in self.errors:
            try:
                self.specs[key] = reward_spec_from_ground_truth(ground_truth, entry, pm=self.pm)
            except Exception as exc:  # a plugin's kind may raise anything: it is the row's fault
                detail = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
                self.errors[key] = f"no reward kind accepts the ground truth: {detail}"
        if key in self.errors:
            raise _RowError(self.errors[key])
        return key


def read_rows(
    path: str | Path, options: RowOptions | None = None, *, pm: pluggy.PluginManager | None = None
) -> ReadResult:
    """Read and validate every row of ``path``. Blank lines are skipped (they
    still count for line numbers); every other line is a row or a problem."""
    opts = options if options is not None else RowOptions()
    result = ReadResult()
    cache = _SpecCache(pm)
    seen: dict[str, int] = {}
    for line, raw in _lines(Path(path)):
        result.lines = line
        if not raw.strip():
            continue
        row_id: RowId | None = None
        data_source: str | None = None
        try:
            try:
                row = json.loads(raw)
            except UnicodeDecodeError as exc:
                raise _RowError(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
            except ValueError as exc:
                raise _RowError(f"not valid JSON ({exc})") from None
            if not isinstance(row, dict):
                raise _RowError(f"a row must be a JSON object, got {type(row).__name__}")
            raw_source = row.get("data_source")
            data_source = None if raw_source is None else str(raw_source)
            this_id = _row_id(row, opts, line)
            key = id_key(this_id)
            if key in seen:
                raise _RowError(f"duplicate id {this_id!r} (first on line {seen[key]})")
            seen[key] = line
            row_id = this_id
            entry = row.get("entry") or opts.entry
            if not isinstance(entry, str):
                raise _RowError(f"'entry' must be a string, got {type(entry).__name__}")
            code = _code(row, opts, entry)
            ground_truth = _ground_truth(row, opts)
            spec_key = cache.key_for(ground_truth, entry)
            group = _group(row, opts)
        except _RowError as exc:
            result.problems.append(RowProblem(line, str(exc), row_id, data_source))
            continue
        sha = hashlib.sha256(canonical_json([code, ground_truth, entry]).encode()).hexdigest()
        result.rows.append(
            InputRow(
                line=line,
                id=this_id,
                key=key,
                code=code,
                ground_truth=ground_truth,
                entry=entry,
                spec_key=spec_key,
                data_source=data_source,
                group=group,
                input_sha=sha[:16],
            )
        )
    result.specs = cache.specs
    return result
