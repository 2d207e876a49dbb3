"""Time and tallies: the per-check budget (interval timers under the exec's
deadline), the count of passed checks, and what the candidate's process
reported."""

# The guest may run Python 3.8 with nothing imported beyond its preload:
# no zip(strict=), no contextlib, and %-formatting is as good as any.
from __future__ import annotations

import os
import signal
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - typing only, never imported in the guest
    from typing import Any


_MAX_FAILURES = 10

_MSG = 160

#: What a candidate's process may take beyond its checks' own timeouts
#: (its fork, its start, its answers on their way) before the grader stops
#: waiting for it.
_CHECK_SLACK_S = 0.5


class _Abort(BaseException):
    """Raised by the interval timer: the current check ran out of time."""


#: While ``depth`` is above 0 the timer's ``_Abort`` is held back, and
#: raised once it is back at 0 (``pending``): see ``remote._without_alarm``.
_ALARM_HELD: dict[str, Any] = {"depth": 0, "pending": False}


def _on_alarm(signum: int, frame: object) -> None:
    if _ALARM_HELD["depth"]:
        _ALARM_HELD["pending"] = True
        return
    raise _Abort()


# What every budget of this process captures, once, before any candidate
# runs (so it cannot fake them); and the alarm handler, set once. A pack
# makes a budget per candidate in the grader and in the spawner, where each
# page written between two forks costs a page fault: ``signal.signal``
# alone (an enum lookup that fails, an exception) writes dozens.
_PROCESS_ONCE: dict[str, Any] = {}


class _Budget:
    """Per-check interval timers bounded by the exec's overall deadline."""

    def __init__(self, cfg: dict[str, Any], start: float) -> None:
        self.span = float(cfg["budget"])
        self.deadline = start + self.span
        limit = cfg.get("test_timeout")
        self.per_check = float(limit) if limit else None
        once = _PROCESS_ONCE
        if not once:
            signal.signal(signal.SIGALRM, _on_alarm)
            once["access"] = os.access
            once["stdlib"] = os.path.dirname(os.__file__)
            once["stdlib_names"] = getattr(sys, "stdlib_module_names", None)
        self._access = once["access"]
        self._stdlib = once["stdlib"]
        self._stdlib_names = once["stdlib_names"]

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def capped(self, checks: int) -> _Budget:
        """This budget, ending no later than ``checks`` per-check timeouts
        (and :data:`_CHECK_SLACK_S`) from now: each check is timed by the
        candidate's own process, and one that cannot time itself (stopped,
        its timer blocked) must not hold the grader for the exec's whole
        budget. Itself when checks have no timeout of their own."""
        if self.per_check is None:
            return self
        capped = object.__new__(_Budget)
        capped.__dict__.update(self.__dict__)
        capped.deadline = min(
            self.deadline, time.monotonic() + checks * self.per_check + _CHECK_SLACK_S
        )
        return capped

    def guest_is_broken(self) -> bool:
        """What the candidate's process may blame (``worker._w_fault``): a
        standard library this process cannot read either."""
        return self._stdlib_names is not None and not self._access(self._stdlib, os.R_OK | os.X_OK)

    def vouched(self, message: str) -> str:
        """``message`` from the candidate's process, an ``environment``
        claim believed only if this process sees the broken guest too (an
        infrastructure failure is skipped, not scored: the candidate's
        process says whatever it likes, and could otherwise turn its own
        failure into no signal); an ``error`` otherwise."""
        if message.startswith("environment") and not self.guest_is_broken():
            return "error" + message[len("environment") :]
        return message


class _Tally:
    def __init__(self, total: int) -> None:
        self.total = total
        self.passed = 0
        self.failed: list[dict[str, Any]] = []
        self.failed_indices: list[int] = []
        self.reasons: set[str] = set()
        self.environment: str | None = None

    def add(self, index: int, reason: str | None, message: str = "") -> None:
        if reason is None:
            self.passed += 1
            return
        self.reasons.add(reason)
        self.failed_indices.append(index)
        if reason == "environment" and self.environment is None:
            self.environment = message
        if len(self.failed) < _MAX_FAILURES:
            self.failed.append({"index": index, "reason": reason, "message": message[:_MSG]})

    def note_statement(self, index: int, statement: str) -> None:
        """The source of failing test ``index``, for the trainer's log only."""
        for entry in self.failed:
            if entry["index"] == index:
                entry["statement"] = statement[:_MSG]

    def verdict(self) -> dict[str, Any]:
        if self.environment is not None:
            return {"reward": 0.0, "environment_error": self.environment}
        return {
            "reward": (self.passed / self.total) if self.total else 0.0,
            "passed": self.passed,
            "total": self.total,
            "failed": self.failed,
            "failed_indices": self.failed_indices,
            "timeout": "timeout" in self.reasons,
            "memory_error": "memory_error" in self.reasons,
        }


class _Results:
    """What the candidate's process reported: ``load`` (why the module did
    not load, or None), ``checks`` (index -> (reason, value or message)),
    and for the checks it never reported, the reason and message to count."""

    def __init__(self) -> None:
        self.load: str | None = None
        self.checks: dict[int, tuple[str, Any]] = {}
        self.missing = ("error", "the candidate's process ended before this check")

    def get(self, index: int) -> tuple[str, Any]:
        return self.checks.get(index, self.missing)

    def vouch(self, budget: _Budget) -> None:
        """A broken guest is an infrastructure failure (the group skips the
        grade instead of scoring it 0), so the candidate's process claiming
        one is believed only if the grader sees the same broken guest."""
        if budget.guest_is_broken():
            return
        if self.load is not None:
            self.load = budget.vouched(self.load)
        for index, (reason, value) in list(self.checks.items()):
            if reason == "environment":
                self.checks[index] = ("error", value)
