"""Grading the pending rows of a file: chunks through ``grade_batch``, seeds,
interrupts.

Rows go in chunks (``chunk_size``) so that memory and the work lost to a
crash stay bounded and the file is made durable (fsync) between two. A chunk
is one :func:`collimate_rl.grade_batch` call when that function grades
candidates of several specs at once; otherwise the chunk's rows are grouped
by identical ground truth (one spec each) and the groups are graded side by
side, the concurrency split between them so that a file of one completion
per prompt keeps as many execs in flight as a file of big groups.

Results are written as they arrive (``on_result``), not when a chunk ends: an
interrupt keeps everything graded up to that moment.

Interrupts: the first SIGINT (or SIGTERM) sets :class:`Halt`. The client is
wrapped so that every exec not yet sent fails at once with
:class:`GradingHalted`; execs in flight finish and their results are
written; nothing the halt cut short is written (a rerun grades those rows).
A second signal exits at once; the lines already written stay valid.
"""

from __future__ import annotations

import concurrent.futures
import inspect
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Final, cast

from ..batch import grade_batch
from ..errors import CollimateError
from ..grading import GradeResult, OnInfraError
from ..rewards.spec import RewardSpec
from ..seeds import DET_SEED, SEED_MODES, seed_from_key
from ..transport import SessionClient
from .results import ResultWriter, infra_record, result_record
from .rows import InputRow

__all__ = [
    "FILE_INFRA_MODES",
    "GradeSettings",
    "GradingHalted",
    "Halt",
    "RunStats",
    "check_supported",
    "grade_rows",
    "preflight",
    "row_seed",
    "spec_lists_supported",
]

#: ``--on-infra-error`` for a file: ``raise`` stops at the first one,
#: ``zero`` writes the row flagged (``"reward": null``), ``skip`` writes
#: nothing for it. A rerun grades the flagged and the missing rows again.
FILE_INFRA_MODES: Final = ("raise", "zero", "skip")
#: Execs in flight when ``--concurrency`` is not given and the rows of a
#: chunk are split into groups (``grade_batch``'s own default).
DEFAULT_CONCURRENCY: Final = 24


@dataclass(frozen=True)
class GradeSettings:
    """How the pending rows are graded. ``None`` leaves a ``grade_batch``
    argument at that function's own default (which may change between
    releases, e.g. its packing)."""

    template: str
    seed_mode: str = "crn"
    seed_salt: str = ""
    timeout_seconds: int | None = None
    concurrency: int | None = None
    pack: int | str | None = None
    on_infra_error: str = "zero"
    chunk_size: int = 256

    def __post_init__(self) -> None:
        if self.seed_mode not in SEED_MODES:
            raise ValueError(f"seed mode must be one of {SEED_MODES}, got {self.seed_mode!r}")
        if self.on_infra_error not in FILE_INFRA_MODES:
            raise ValueError(
                f"on_infra_error must be one of {FILE_INFRA_MODES}, got {self.on_infra_error!r}"
            )
        if self.chunk_size < 1:
            raise ValueError(f"chunk size must be >= 1, got {self.chunk_size}")


def row_seed(row: InputRow, mode: str, salt: str = "") -> str | None:
    """The exec seed of a row. ``crn``: one seed per group, derived from the
    group key (``seed_from_key(prompt_id)``), so every completion of a prompt
    meets the same test cases and a rerun meets them again; a row without a
    group is a group of its own (keyed ``row:<id>``). ``vanilla``: none (the
    target draws one and echoes it). ``deterministic``: :data:`DET_SEED`."""
    if mode == "vanilla":
        return None
    if mode == "deterministic":
        return DET_SEED
    key = row.group if row.group is not None else f"row:{row.id}"
    return seed_from_key(key, salt)


class GradingHalted(CollimateError):
    """An exec not sent because the run was halted (interrupt, or the first
    infra error with ``raise``)."""

    def __init__(self) -> None:
        super().__init__("grading halted before this exec was sent", None, "halted")


class Halt:
    """The run's stop flag, and why it was set."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signum: int | None = None

    def set(self, signum: int | None = None) -> None:
        if self.signum is None:
            self.signum = signum
        self.event.set()

    def is_set(self) -> bool:
        return self.event.is_set()


class _HaltableClient:
    """The target's client, refusing new execs once the run is halted: the
    rows ``grade_batch`` has queued then come back at once (as infra failures
    that are not written) instead of being graded after Ctrl-C."""

    def __init__(self, client: SessionClient, halt: Halt) -> None:
        self._client = client
        self._halt = halt

    def exec_once(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        if self._halt.is_set():
            raise GradingHalted()
        return self._client.exec_once(*args, **kwargs)

    def session_exec(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        if self._halt.is_set():
            raise GradingHalted()
        return self._client.session_exec(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:  # endpoint, health, ...: the real client's
        return getattr(self._client, name)


@dataclass
class RunStats:
    """What this run did (the summary reads the file; these are for messages)."""

    graded: int = 0
    infra_written: int = 0
    infra_skipped: int = 0
    first_infra_error: str | None = None
    stopped_on_infra: bool = False
    elapsed_s: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, name: str, error: str | None = None) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + 1)
            if error is not None and self.first_infra_error is None:
                self.first_infra_error = error


def _annotation(name: str) -> str:
    """``grade_batch``'s annotation of parameter ``name``, as text, with a
    bare alias (``spec: Specs``) looked up in its module: what it accepts."""
    try:
        param = inspect.signature(grade_batch).parameters.get(name)
    except (TypeError, ValueError):  # pragma: no cover - a C function or a wrapper
        return ""
    if param is None or param.annotation is inspect.Parameter.empty:
        return ""
    annotation = param.annotation
    if isinstance(annotation, str) and annotation.isidentifier():
        annotation = getattr(grade_batch, "__globals__", {}).get(annotation, annotation)
    return annotation if isinstance(annotation, str) else repr(annotation)


def spec_lists_supported() -> bool:
    """Whether ``grade_batch`` takes one spec per candidate (a sequence), so
    that a chunk of mixed prompts is one call. Read from its signature: the
    function is evolving, and a wrong guess would fail every grade."""
    return "Sequence" in _annotation("spec")


def check_supported(settings: GradeSettings) -> None:
    """Raise ValueError for a setting this ``grade_batch`` does not take
    (``pack="auto"`` before it learnt it), before any row is graded."""
    if settings.pack == "auto" and "auto" not in _annotation("pack"):
        raise ValueError("--pack auto: this collimate-rl-core's grade_batch has no 'auto' pack")


class Progress:
    """A rich bar on stderr when asked for (and rich is installed); else a
    plain line at most every few seconds; or nothing."""

    def __init__(self, enabled: bool, total: int, *, description: str = "grading") -> None:
        self.total = total
        self.done = 0
        self._enabled = enabled and total > 0
        self._bar: Any = None
        self._task: Any = None
        self._last = 0.0
        self._lock = threading.Lock()
        if not self._enabled:
            return
        try:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TaskProgressColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as RichProgress
        except ImportError:
            return
        self._bar = RichProgress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TaskProgressColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=Console(file=sys.stderr),
            transient=False,
        )
        self._task = self._bar.add_task(description, total=total)

    @contextmanager
    def running(self) -> Iterator[Progress]:
        if self._bar is None:
            yield self
            if self._enabled:
                self._plain(force=True)
            return
        with self._bar:
            yield self

    def advance(self) -> None:
        with self._lock:
            self.done += 1
        if self._bar is not None:
            self._bar.advance(self._task)
        elif self._enabled:
            self._plain()

    def _plain(self, force: bool = False) -> None:
        now = time.monotonic()
        with self._lock:
            if not force and now - self._last < 5.0 and self.done != self.total:
                return
            self._last = now
            done = self.done
        print(f"collimate grade: {done}/{self.total} rows graded", file=sys.stderr, flush=True)


def preflight(client: SessionClient, template: str) -> None:
    """Fail before grading, not on every row: the target must answer, and must
    serve the template when it lists what it serves. Raises CollimateError
    (unreachable) or LookupError (no such template)."""
    health = client.health()
    served: Any = health.get("templates") if isinstance(health, Mapping) else None
    if not isinstance(served, list) or not all(isinstance(t, str) for t in served):
        return  # a target that does not say what it serves: the grades will tell
    if served and template not in served:
        raise LookupError(
            f"the target does not serve template {template!r} "
            f"(it serves: {', '.join(sorted(served))}); pick one with --template"
        )


@contextmanager
def halting_on_signals(halt: Halt) -> Iterator[None]:
    """SIGINT/SIGTERM set ``halt`` (the run winds down and writes what is
    graded); a second one exits at once. Only the main thread may install
    handlers: elsewhere (a caller's worker thread) nothing is installed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        if halt.is_set() and halt.signum is not None:
            os._exit(128 + signum)  # the second one: every line written is complete
        halt.set(signum)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def _batch_kwargs(settings: GradeSettings) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    if settings.timeout_seconds is not None:
        kwargs["timeout_seconds"] = settings.timeout_seconds
    if settings.pack is not None:
        kwargs["pack"] = settings.pack
    return kwargs


Sink = Callable[[InputRow, GradeResult], None]


def _calls(
    rows: Sequence[InputRow], specs: Mapping[str, RewardSpec], by_candidate: bool
) -> list[tuple[list[int], Any]]:
    """``(row indices, spec or specs)`` per ``grade_batch`` call for a chunk."""
    if by_candidate:
        return [(list(range(len(rows))), [specs[r.spec_key] for r in rows])]
    groups: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        groups.setdefault(row.spec_key, []).append(i)
    return [(indices, specs[key]) for key, indices in groups.items()]


def _grade_chunk(
    client: SessionClient,
    rows: Sequence[InputRow],
    specs: Mapping[str, RewardSpec],
    settings: GradeSettings,
    sink: Sink,
    halt: Halt,
    stats: RunStats,
) -> None:
    seeds = [row_seed(r, settings.seed_mode, settings.seed_salt) for r in rows]
    calls = _calls(rows, specs, spec_lists_supported())
    concurrency = settings.concurrency
    workers = min(concurrency or DEFAULT_CONCURRENCY, len(calls))
    base = _batch_kwargs(settings)
    if concurrency is not None or workers > 1:
        base["concurrency"] = max(1, (concurrency or DEFAULT_CONCURRENCY) // workers)
    # "raise" too gets each infra failure as a flagged result, so that the
    # sink stops the run naming the row (the halt refuses the execs not sent)
    mode: OnInfraError = "zero"

    def call(indices: list[int], spec: Any) -> None:
        if halt.is_set():
            return
        try:
            grade_batch(
                client,
                settings.template,
                [rows[i].code for i in indices],
                spec,
                seeds=[seeds[i] for i in indices],
                on_infra_error=mode,
                on_result=lambda j, result: sink(rows[indices[j]], result),
                **base,
            )
        except CollimateError as exc:  # raised all the same: stop, the rest stay to grade
            if isinstance(exc, GradingHalted) or halt.is_set():
                return
            with stats._lock:
                stats.stopped_on_infra = True
                if stats.first_infra_error is None:
                    stats.first_infra_error = f"{type(exc).__name__}: {exc}"
            halt.set()

    if workers <= 1:
        for indices, spec in calls:
            call(indices, spec)
        return
    with concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="grade-file") as pool:
        futures = [pool.submit(call, indices, spec) for indices, spec in calls]
        for future in concurrent.futures.as_completed(futures):
            future.result()  # a bug (not an infra error) surfaces here


def grade_rows(
    client: SessionClient,
    rows: Sequence[InputRow],
    specs: Mapping[str, RewardSpec],
    settings: GradeSettings,
    writer: ResultWriter,
    *,
    halt: Halt | None = None,
    progress: Progress | None = None,
) -> RunStats:
    """Grade ``rows`` (in order, ``settings.chunk_size`` at a time) and append
    each result to ``writer`` as it arrives. Returns when every row is
    graded, or when ``halt`` is set (by a signal, or by the first infra
    error with ``on_infra_error="raise"``) and the execs in flight are done."""
    halt = halt if halt is not None else Halt()
    stats = RunStats()
    bar = progress if progress is not None else Progress(False, len(rows))
    guarded = cast(SessionClient, _HaltableClient(client, halt))
    started = time.monotonic()

    def sink(row: InputRow, result: GradeResult) -> None:
        if result.infra_error:
            if halt.is_set():
                return  # cut short by the halt (or beside it): a rerun grades it
            error = f"{row.where}: {result.error or 'infrastructure error'}"
            if settings.on_infra_error == "raise":  # stop at the first; nothing written
                with stats._lock:
                    stats.stopped_on_infra = True
                    if stats.first_infra_error is None:
                        stats.first_infra_error = error
                halt.set()
                return
            if settings.on_infra_error == "skip":
                stats.add("infra_skipped", error)
            else:
                writer.write(infra_record(row, result, settings.template))
                stats.add("infra_written", error)
        else:
            writer.write(result_record(row, result, settings.template))
            stats.add("graded")
        bar.advance()

    with bar.running():
        for start in range(0, len(rows), settings.chunk_size):
            if halt.is_set():
                break
            chunk = rows[start : start + settings.chunk_size]
            _grade_chunk(guarded, chunk, specs, settings, sink, halt, stats)
            writer.sync()
    stats.elapsed_s = time.monotonic() - started
    return stats
