"""The replay manifest: every exec recorded as JSONL, and replayed on demand.

A :class:`ReplayManifest` is an observer plugin (``collimate_rl_before_exec``
/ ``collimate_rl_after_exec``): while it is registered, every exec any client
sends (sync or async, either wire) is appended to a JSONL file with its
request, the seed the backend echoed, the response (or the error) and the
timings. Since the seed is always echoed, each line is enough to run the exec
again: :func:`replay_manifest` does that and reports every difference.

::

    with record_manifest("run.jsonl"):
        grade_batch(client, "py", candidates, spec, seeds=group_seeds(8))
    report = replay_manifest("run.jsonl", client)
    assert report.ok, report.summary()
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import pluggy

from .errors import CollimateError
from .plugins.events import ExecEvent
from .plugins.markers import hookimpl

if TYPE_CHECKING:
    from .transport import SessionClient

__all__ = [
    "MANIFEST_VERSION",
    "Mismatch",
    "ReplayManifest",
    "ReplayReport",
    "read_manifest",
    "record_manifest",
    "replay_manifest",
]

MANIFEST_VERSION = 1
#: Response fields compared on replay by default (timings always differ).
DEFAULT_COMPARE = ("exit_code", "stdout", "seed")


def _error_record(error: BaseException) -> dict[str, Any]:
    record: dict[str, Any] = {"type": type(error).__name__, "message": str(error)}
    if isinstance(error, CollimateError):
        record["status"] = error.status if isinstance(error.status, int) else None
        record["error_code"] = error.error_code
    return record


class ReplayManifest:
    """Observer plugin appending one JSON line per finished exec to ``path``.

    Thread-safe (one lock around each write) and flushed line by line, so a
    crashed run keeps everything recorded up to the crash.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._fh: IO[str] | None = None
        self.count = 0

    def _file(self) -> IO[str]:
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = self.path.open("a", encoding="utf-8")
        return self._fh

    @hookimpl
    def collimate_rl_before_exec(self, event: ExecEvent) -> None:
        """Nothing to record yet: the line is written once the exec ended."""

    @hookimpl
    def collimate_rl_after_exec(self, event: ExecEvent) -> None:
        response = event.response
        record: dict[str, Any] = {
            "v": MANIFEST_VERSION,
            "started_at": event.started_at,
            "wire": event.wire,
            "endpoint": event.endpoint,
            "target": event.target,
            "one_shot": event.one_shot,
            "request": event.request,
            "seed": (response or {}).get("seed") or event.request.get("seed"),
            "response": response,
            "error": _error_record(event.error) if event.error is not None else None,
            "elapsed_ms": event.elapsed_ms,
        }
        line = json.dumps(record, ensure_ascii=False, default=str)
        with self._lock:
            fh = self._file()
            fh.write(line + "\n")
            fh.flush()
            self.count += 1

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None


@contextmanager
def record_manifest(
    path: str | Path, *, pm: pluggy.PluginManager | None = None
) -> Iterator[ReplayManifest]:
    """Record every exec made inside the block to ``path`` (JSONL, appended)."""
    if pm is None:
        from .plugins.manager import get_plugin_manager

        pm = get_plugin_manager()
    manifest = ReplayManifest(path)
    name = f"collimate_rl.manifest:{id(manifest)}"
    pm.register(manifest, name=name)
    try:
        yield manifest
    finally:
        pm.unregister(name=name)
        manifest.close()


def read_manifest(path: str | Path) -> list[dict[str, Any]]:
    """The records of a manifest file, in order."""
    records = []
    with Path(path).open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except ValueError as exc:
                raise ValueError(f"{path}:{n}: not a manifest line ({exc})") from exc
    return records


@dataclass(frozen=True)
class Mismatch:
    """One field of one replayed exec that differs from the recording."""

    line: int
    target: str
    field: str
    recorded: Any
    replayed: Any

    def __str__(self) -> str:
        return (
            f"line {self.line} ({self.target}): {self.field}: "
            f"recorded {self.recorded!r:.120} != replayed {self.replayed!r:.120}"
        )


@dataclass
class ReplayReport:
    """What a replay found. ``ok`` means every exec reproduced exactly."""

    total: int = 0
    matched: int = 0
    skipped: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def summary(self) -> str:
        head = (
            f"{self.matched}/{self.total} execs reproduced, {len(self.mismatches)} "
            f"mismatches, {self.skipped} skipped"
        )
        return "\n".join([head, *(f"  {m}" for m in self.mismatches)])


_EXEC_FIELDS = ("command", "commands", "code", "files", "timeout_seconds")


def _replay_one(
    client: SessionClient,
    record: Mapping[str, Any],
    sessions: dict[str, str],
    session_template: Callable[[str], str | None],
) -> dict[str, Any]:
    request = dict(record.get("request") or {})
    kwargs = {k: request[k] for k in _EXEC_FIELDS if k in request}
    kwargs["seed"] = record.get("seed") or request.get("seed")
    if record.get("one_shot"):
        return client.exec_once(
            str(request.get("template_id") or record.get("target")),
            egress=request.get("egress"),
            **kwargs,
        )
    original = str(record.get("target"))
    if original not in sessions:
        template = session_template(original)
        if template is None:
            raise LookupError(f"no template known for session {original!r}: pass session_template=")
        sessions[original] = client.create_session(template)["session_id"]
    return client.session_exec(sessions[original], **kwargs)


def replay_manifest(
    path: str | Path,
    client: SessionClient,
    *,
    compare: tuple[str, ...] = DEFAULT_COMPARE,
    session_template: str | Mapping[str, str] | None = None,
    normalize: Callable[[str, Any], Any] | None = None,
) -> ReplayReport:
    """Run every recorded exec again (same request, same seed) and report
    each difference in the ``compare`` fields.

    One-shot execs replay as one-shot execs. Execs of a session replay, in
    their recorded order, in one fresh session per recorded session, forked
    from ``session_template`` (a template id, or a mapping from recorded
    session id to template id). Records of execs that failed at the control
    plane are skipped (there is no answer to compare against).
    ``normalize(field, value)`` may canonicalise values before comparison.
    """
    lookup: Callable[[str], str | None]
    if isinstance(session_template, Mapping):
        mapping = dict(session_template)
        lookup = mapping.get
    else:
        fixed = session_template
        lookup = lambda _sid: fixed  # noqa: E731
    canon = normalize or (lambda _field, value: value)
    report = ReplayReport()
    sessions: dict[str, str] = {}
    try:
        for line, record in enumerate(read_manifest(path), 1):
            recorded = record.get("response")
            if not isinstance(recorded, Mapping):
                report.skipped += 1
                continue
            report.total += 1
            target = str(record.get("target"))
            try:
                replayed = _replay_one(client, record, sessions, lookup)
            except (CollimateError, LookupError) as exc:
                report.mismatches.append(Mismatch(line, target, "error", None, str(exc)))
                continue
            before = len(report.mismatches)
            for name in compare:
                want, got = canon(name, recorded.get(name)), canon(name, replayed.get(name))
                if want != got:
                    report.mismatches.append(Mismatch(line, target, name, want, got))
            if len(report.mismatches) == before:
                report.matched += 1
    finally:
        for session_id in sessions.values():
            with contextlib.suppress(CollimateError):
                client.delete_session(session_id)
    return report
