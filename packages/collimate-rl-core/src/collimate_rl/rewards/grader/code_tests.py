"""Test code run in the grader: one test under the time budget, and the
verdict for test code that failed before its tests ran. Shared by the code
kinds (:mod:`.kinds`) and the pytest stand-in (:mod:`.pytest_shim`), so it
sits below both."""

# The guest may run Python 3.8 with nothing imported beyond its preload:
# no zip(strict=), no contextlib, and %-formatting is as good as any.
# ruff: noqa: UP031
from __future__ import annotations

from .budget import _MSG, _Abort, _Budget, _Tally
from .remote import CandidateError
from .stand_ins import _Session

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - typing only, never imported in the guest
    from typing import Any


def _run_test(budget: _Budget, fn: Any, *args: Any) -> tuple[str | None, str]:
    """(None, "") when ``fn`` returns; else (reason, message). Only a
    return passes: a ``SystemExit`` in test code is a failure here."""
    left = budget.left()
    if budget.per_check is not None:
        left = min(left, budget.per_check)
    if left <= 0:
        return "timeout", "no time left in the exec budget"
    import signal

    try:
        signal.setitimer(signal.ITIMER_REAL, left)
        try:
            fn(*args)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Abort:
        return "timeout", "exceeded %.3gs" % left
    except AssertionError as exc:
        return "wrong_answer", ("AssertionError: %s" % exc)[:_MSG]
    except CandidateError as exc:
        return "error", str(exc)[:_MSG]
    except BaseException as exc:
        return "error", (type(exc).__name__ + ": " + str(exc))[:_MSG]
    return None, ""


def _test_code_failed(
    session: _Session, calls_before: int, what: str, message: str, tally: _Tally
) -> dict[str, Any]:
    """A verdict for test code (a setup, a check module, a test module)
    that failed before its tests ran: the dataset's fault (an infrastructure
    failure, never a 0.0) unless it had called the candidate's code by then,
    whose answer may be what failed it: the candidate's failure, then (a
    candidate must not turn its own failure into a skipped sample)."""
    if session.calls == calls_before:
        return {"reward": 0.0, "grader_error": "%s failed: %s" % (what, message)}
    verdict = tally.verdict()
    verdict["load_error"] = ("%s failed once it called the candidate: %s" % (what, message))[
        : _MSG * 2
    ]
    return verdict
