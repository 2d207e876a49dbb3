"""The counters ``GET /v1/stats`` serves: what a live view of the server
(``collimate top``) and a test comparing a client's figures with the
server's own read.

:class:`ExecTally` is told of every exec the service answers: its outcome
(exit 0, another exit, a timeout) and how long the server spent on it. The
latencies kept are the last :data:`RECENT_EXECS` only, so the percentiles
describe the server now, not since it started, and memory stays bounded.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any, Final

from .._percentile import nearest_rank

__all__ = ["RECENT_EXECS", "ExecTally"]

#: Exec latencies kept for the percentiles.
RECENT_EXECS: Final = 2048


class ExecTally:
    """Outcomes and recent latencies of the execs a server answered."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.ok = 0
        self.nonzero = 0
        self.timeout = 0
        self._recent_ms: deque[float] = deque(maxlen=RECENT_EXECS)

    def record(self, *, exit_code: int, timed_out: bool, total_ms: float) -> None:
        if timed_out:
            self.timeout += 1
        elif exit_code == 0:
            self.ok += 1
        else:
            self.nonzero += 1
        self._recent_ms.append(total_ms)

    def describe(self) -> dict[str, Any]:
        ordered = sorted(self._recent_ms)
        return {
            "uptime_s": round(time.monotonic() - self.started, 3),
            "verdicts": {"ok": self.ok, "nonzero": self.nonzero, "timeout": self.timeout},
            "exec_ms": {
                "samples": len(ordered),
                "p50": round(nearest_rank(ordered, 50), 3),
                "p99": round(nearest_rank(ordered, 99), 3),
            },
        }
