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
    reason, message, _exc = _attempt(budget, fn, *args)
    return reason, message


def _attempt(budget: _Budget, fn: Any, *args: Any) -> tuple[str | None, str, Any]:
    """:func:`_run_test`, and the exception that failed it (None: none did,
    or it ran out of time)."""
    left = budget.left()
    if budget.per_check is not None:
        left = min(left, budget.per_check)
    if left <= 0:
        return "timeout", "no time left in the exec budget", None
    import signal

    try:
        signal.setitimer(signal.ITIMER_REAL, left)
        try:
            fn(*args)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Abort:
        return "timeout", "exceeded %.3gs" % left, None
    except AssertionError as exc:
        return "wrong_answer", ("AssertionError: %s" % exc)[:_MSG], exc
    except CandidateError as exc:
        return "error", str(exc)[:_MSG], exc
    except BaseException as exc:
        return "error", (type(exc).__name__ + ": " + str(exc))[:_MSG], exc
    return None, "", None


#: What test code can fail with because of what the candidate did without
#: being called: the guest as its processes left it or keep changing it
#: (files, permissions, memory), and the names its module defines or not.
_GUEST_OR_NAMES = (OSError, MemoryError, RecursionError, NameError, ImportError, AttributeError)


def _test_code_failed(
    session: _Session,
    calls_before: int,
    what: str,
    failure: tuple[str | None, str, Any],
    tally: _Tally,
    source: str,
) -> dict[str, Any]:
    """A verdict for test code (``source``: a setup, a check module, a test
    module, a prompt) that failed before its tests ran (``failure``, as
    :func:`_attempt` returned it).

    Test code runs after the candidate's code, so its failure is the
    candidate's (its verdict: 0.0, never an infrastructure failure that
    would skip the sample) unless the grader can show the candidate had no
    part in it. It can when the test code called nothing of the candidate,
    read none of the names the candidate's code defines, and failed by its
    own logic; not when it ran out of time (the candidate's processes share
    the CPU), ran out of memory or hit the guest (files, permissions: the
    candidate's processes may have changed them), or missed a name (one the
    candidate may have been expected to define). Then it is the dataset's
    fault: an infrastructure failure."""
    reason, message, exc = failure
    if not (
        session.calls != calls_before
        or reason == "timeout"
        or isinstance(exc, _GUEST_OR_NAMES)
        or _reads_any(source, session.exports)
    ):
        return {"reward": 0.0, "grader_error": "%s failed: %s" % (what, message)}
    verdict = tally.verdict()
    verdict["load_error"] = ("%s failed once the candidate's code had run: %s" % (what, message))[
        : _MSG * 2
    ]
    return verdict


def _reads_any(source: str, names: Any) -> bool:
    """Whether ``source`` reads one of ``names`` (or imports ``solution``,
    the candidate's module); True when it cannot be told."""
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in names:
            return True
        if isinstance(node, ast.ImportFrom) and node.module == "solution":
            return True
        if isinstance(node, ast.Import) and any(a.name == "solution" for a in node.names):
            return True
    return False
