"""The gateway's usage meter: what each tenant ran, over any window.

Metered from the events themselves (a sandbox started, suspended, resumed,
ended; an exec ran; a bake was asked for), in wall-clock time, so ``GET
/v1/usage?from=&to=`` can clip every interval to the window asked for. The
meter pauses while a sandbox is suspended: suspended time is counted apart.
Execs are summed per tenant and wall-clock second (a long-lived server does
not keep one record per exec; a second that overlaps the window counts), and
records older than ``RETAIN_S`` go.
"""

from __future__ import annotations

import datetime as _dt
import time
from dataclasses import dataclass, field
from typing import Any

from .wire_errors import bad_request

DEFAULT_WINDOW_S = 30 * 24 * 3600.0
# what the meter remembers: records that ended longer ago than this are dropped
RETAIN_S = 400 * 24 * 3600.0


@dataclass
class _SandboxMeter:
    tenant: str
    started: float
    forked: bool
    ended: float | None = None
    # [start, end or None] of each suspension
    suspensions: list[list[float | None]] = field(default_factory=list)


def _overlap(a: float, b: float | None, lo: float, hi: float, now: float) -> float:
    end = now if b is None else b
    return max(0.0, min(end, hi) - max(a, lo))


def rfc3339(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).isoformat().replace("+00:00", "Z")


def parse_rfc3339(value: str, name: str) -> float:
    """An RFC3339 time as epoch seconds; 400 ``bad_request`` naming ``name``."""
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = _dt.datetime.fromisoformat(text)
    except ValueError:
        raise bad_request(
            f"{name} must be an RFC3339 time like 2026-01-31T12:00:00Z, not {value!r}"
        ) from None
    if parsed.tzinfo is None:
        raise bad_request(f"{name} needs a time zone (e.g. a trailing Z): {value!r}")
    return parsed.timestamp()


class UsageMeter:
    """Per-tenant records of sandboxes, execs and bakes."""

    def __init__(self) -> None:
        self._sandboxes: dict[str, _SandboxMeter] = {}
        # (tenant, wall-clock second) -> [execs, exec seconds]
        self._execs: dict[tuple[str, int], list[float]] = {}
        self._bakes: list[tuple[str, float]] = []
        self._next_prune = time.time() + 3600.0

    def sandbox_started(self, tenant: str, sandbox_id: str, *, forked: bool = False) -> None:
        self._sandboxes[sandbox_id] = _SandboxMeter(tenant, time.time(), forked)

    def sandbox_suspended(self, sandbox_id: str) -> None:
        meter = self._sandboxes.get(sandbox_id)
        if meter is not None and (not meter.suspensions or meter.suspensions[-1][1] is not None):
            meter.suspensions.append([time.time(), None])

    def sandbox_resumed(self, sandbox_id: str) -> None:
        meter = self._sandboxes.get(sandbox_id)
        if meter is not None and meter.suspensions and meter.suspensions[-1][1] is None:
            meter.suspensions[-1][1] = time.time()

    def sandbox_ended(self, sandbox_id: str) -> None:
        meter = self._sandboxes.get(sandbox_id)
        if meter is not None and meter.ended is None:
            self.sandbox_resumed(sandbox_id)
            meter.ended = time.time()

    def exec_ran(self, tenant: str, exec_seconds: float) -> None:
        now = time.time()
        slot = self._execs.setdefault((tenant, int(now)), [0, 0.0])
        slot[0] += 1
        slot[1] += exec_seconds
        if now >= self._next_prune:
            self.prune(now)

    def prune(self, now: float) -> None:
        """Forget what ended more than ``RETAIN_S`` ago."""
        horizon = now - RETAIN_S
        self._next_prune = now + 3600.0
        self._sandboxes = {
            sid: m for sid, m in self._sandboxes.items() if m.ended is None or m.ended >= horizon
        }
        self._execs = {k: v for k, v in self._execs.items() if k[1] >= horizon}
        self._bakes = [(t, at) for t, at in self._bakes if at >= horizon]

    def bake_asked(self, tenant: str) -> None:
        self._bakes.append((tenant, time.time()))

    def summary(self, tenant: str, start: str | None, end: str | None) -> dict[str, Any]:
        """The body of ``GET /v1/usage``: ``{from, to, totals}``."""
        now = time.time()
        hi = parse_rfc3339(end, "to") if end else now
        lo = parse_rfc3339(start, "from") if start else hi - DEFAULT_WINDOW_S
        if lo > hi:
            raise bad_request("from must not be later than to")
        live = susp = 0.0
        created = forked = 0
        for meter in self._sandboxes.values():
            if meter.tenant != tenant:
                continue
            if lo <= meter.started <= hi:
                created += 1
                forked += meter.forked
            whole = _overlap(meter.started, meter.ended, lo, hi, now)
            paused = sum(_overlap(a or 0.0, b, lo, hi, now) for a, b in meter.suspensions)
            live += whole - paused
            susp += paused
        execs = [
            v for (t, at), v in self._execs.items() if t == tenant and lo < at + 1 and at <= hi
        ]
        bakes = sum(1 for t, at in self._bakes if t == tenant and lo <= at <= hi)
        return {
            "from": rfc3339(lo),
            "to": rfc3339(hi),
            "totals": {
                "sandboxes": created,
                "forked_sandboxes": forked,
                "sandbox_seconds": round(live, 3),
                "suspended_seconds": round(susp, 3),
                "execs": int(sum(v[0] for v in execs)),
                "exec_seconds": round(sum(v[1] for v in execs), 3),
                "bakes": bakes,
            },
        }
