"""Comparing a candidate's result with the trusted one, strict about types."""

# The guest may run Python 3.8 with nothing imported beyond its preload:
# no zip(strict=), no contextlib, and %-formatting is as good as any.
# ruff: noqa: UP031, B905
from __future__ import annotations

from .budget import _MSG, _Tally

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - typing only, never imported in the guest
    from typing import Any


_PLAIN = (type(None), bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset)


def _is_number(value: Any) -> bool:
    return type(value) in (int, float)


def same(got: Any, want: Any, tol: float) -> bool:
    """``got`` equals the trusted ``want``: lists and tuples interchangeable,
    floats within ``tol`` (absolute or relative), exact builtin types only
    (what crosses from the candidate's process is plain data already: its
    numpy values were made builtins there)."""
    if type(want) not in _PLAIN:
        try:
            return bool(want == got)
        except Exception:
            return False
    if type(got) not in _PLAIN:
        return False
    if type(want) is float or type(got) is float:
        if not (_is_number(got) and _is_number(want)):
            return False
        if got == want:
            return True
        return bool(abs(got - want) <= tol * max(1.0, abs(want)))
    if isinstance(want, (list, tuple)):
        if not isinstance(got, (list, tuple)) or len(got) != len(want):
            return False
        return all(same(g, w, tol) for g, w in zip(got, want))
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(got) != set(want):
            return False
        return all(same(got[k], want[k], tol) for k in want)
    try:
        return bool(type(got) is type(want) and got == want) or (
            _is_number(got) and _is_number(want) and got == want
        )
    except Exception:
        return False


def same_tokens(got: str, want: str, tol: float | None) -> bool:
    """Whitespace-normalised comparison of program output (competitive
    programming style). An expected token written as a float (``.`` or an
    exponent) accepts an absolute or relative error up to ``tol``; integer and
    word tokens must match exactly."""
    g, w = got.split(), want.split()
    if len(g) != len(w):
        return False
    for a, b in zip(g, w):
        if a == b:
            continue
        if tol is None or not any(c in b for c in ".eE"):
            return False
        try:
            fa, fb = float(a), float(b)
        except ValueError:
            return False
        if not abs(fa - fb) <= tol * max(1.0, abs(fb)):
            return False
    return True


def _judge(
    tally: _Tally,
    index: int,
    reason: str,
    got: Any,
    want: Any,
    tol: float,
    shown: tuple[Any, ...] = (),
) -> None:
    """Count one check the candidate's process reported (``shown``: the
    input, named in a wrong answer's message). A value that could not travel
    (``unplain``: its repr came instead) can only match an expected value
    that is not plain data either (a reference returning a ``Fraction``), by
    repr."""
    if reason == "unplain":
        if type(want) not in _PLAIN and got == repr(want):
            tally.add(index, None)
        else:
            tally.add(index, "wrong_answer", "got %s" % str(got)[:_MSG])
    elif reason != "ok":
        tally.add(index, reason, str(got))
    elif same(got, want, tol):
        tally.add(index, None)
    elif shown:
        tally.add(
            index, "wrong_answer", "input %s: got %s" % (_shown(shown[0], 80), _shown(got, 80))
        )
    else:
        tally.add(index, "wrong_answer", "got %s" % _shown(got, 150))


def _shown(value: Any, size: int) -> str:
    """``repr(value)``, cut to ``size``, for a message. A value from the
    candidate's process may be nested deeper than ``repr`` goes (a process
    running the candidate's code can send any marshal data): it is then
    named by its type, and the grader goes on."""
    try:
        return repr(value)[:size]
    except Exception:
        return "<a %s nested too deep to show>" % type(value).__name__
