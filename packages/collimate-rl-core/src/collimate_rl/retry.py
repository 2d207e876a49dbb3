"""The one retry policy of every client (docs/wire.md §5), as pure logic.

The four clients (daemon and gateway, sync and async) differ only in how they
send bytes and how they sleep. *Whether* to send again, and *how long* to wait
first, is decided here, once, so the rules cannot drift apart between them:

* an idempotent request (GET, DELETE, an idempotent POST) is retried on
  429/500/502/503/504 and on any transport error;
* a non-idempotent POST (create, exec, fork) is retried only when the server
  proved nothing happened: ``at_capacity``, ``session_bringup_failed``,
  ``draining``, or a connection that failed before a byte was sent. A read
  timeout or a reset after connect is never retried: the exec may have run,
  and running it twice (or forking twice) is worse than failing loudly;
* ``410`` and the codes of :data:`collimate_rl.wire.NEVER_RETRY_CODES` never;
* attempt ``i`` sleeps ``uniform(0, backoff * 2**i)`` (full jitter, so a shed
  GRPO group does not come back as a synchronized herd) and the sleeps of one
  request never add up to more than ``retry_budget`` seconds.

The RNG is injectable so tests replay exact delays, and nothing here sleeps:
the send loops do, with a sleep function they were given.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from .errors import CollimateError
from .wire import is_retry_safe

__all__ = ["RetryPolicy", "RetryState", "exec_read_timeout"]

#: Seconds an exec's socket waits past the exec's own timeout before it gives
#: up: the server needs time to kill the run and answer ``exit_code: -1``.
EXEC_TIMEOUT_GRACE_S = 30.0


def exec_read_timeout(client_timeout: float, timeout_seconds: float | None) -> float:
    """How long to wait for an exec's answer: ``max(client timeout,
    timeout_seconds + 30)``, so a 30-minute test-suite exec is never
    abandoned client-side while the server is still running it."""
    if timeout_seconds is None:
        return client_timeout
    return max(client_timeout, float(timeout_seconds) + EXEC_TIMEOUT_GRACE_S)


@dataclass(frozen=True)
class RetryPolicy:
    """How many times, and how patiently, one request is sent again.

    ``rng`` draws the jitter; pass a seeded ``random.Random`` for replayable
    delays. It is shared by every request of a client (``random.Random`` is
    safe to share between threads).
    """

    retries: int = 3
    backoff: float = 0.15
    retry_budget: float = 30.0
    rng: random.Random = field(default_factory=random.Random, compare=False)

    def __post_init__(self) -> None:
        if self.retries < 0:
            raise ValueError(f"retries must be >= 0, got {self.retries}")
        if self.backoff < 0 or self.retry_budget < 0:
            raise ValueError("backoff and retry_budget must be >= 0")

    def start(self, *, idempotent: bool) -> RetryState:
        """The bookkeeping of one request (create one per logical call)."""
        return RetryState(self, idempotent)


class RetryState:
    """One request's attempts so far. Each ``after_*`` method answers
    "sleep this many seconds, then send again" or ``None`` ("give up: raise
    what you have")."""

    __slots__ = ("_policy", "attempt", "idempotent", "slept")

    def __init__(self, policy: RetryPolicy, idempotent: bool) -> None:
        self._policy = policy
        self.idempotent = idempotent
        self.attempt = 0  # retries granted so far
        self.slept = 0.0  # seconds of backoff granted so far

    def after_error(self, error: CollimateError) -> float | None:
        """The server answered with an error (a non-2xx status)."""
        safe = is_retry_safe(
            idempotent=self.idempotent, status=error.status, error_code=error.error_code
        )
        return self._next_delay(safe)

    def after_transport_error(self, *, nothing_sent: bool) -> float | None:
        """No answer came back. ``nothing_sent`` is the transport's word that
        the request never left (connection refused, nothing to connect to):
        only then is a non-idempotent POST sent again."""
        return self._next_delay(nothing_sent or self.idempotent)

    def _next_delay(self, retryable: bool) -> float | None:
        policy = self._policy
        if not retryable or self.attempt >= policy.retries:
            return None
        remaining = policy.retry_budget - self.slept
        if remaining <= 0:
            return None
        delay = min(policy.rng.uniform(0.0, policy.backoff * 2**self.attempt), remaining)
        self.attempt += 1
        self.slept += delay
        return delay
