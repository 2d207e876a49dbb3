"""The observation a failed attempt gets in a multi-turn episode.

It says what the grader reported about the attempt: how many tests passed,
a syntax or import error, a timeout, and for each failing test (up to
:data:`MAX_SHOWN`) its number, why it failed and the grader's message.
It adds nothing the grader did not report: the tests themselves, the
expected outputs and the other tests stay sealed. And it forwards no
grader message that quotes the row's ground truth (:func:`sealed_lines`: a
failing assert reported with its statement, a setup error showing its
line): such a message is left out, the test's number and reason stay.
"""

from __future__ import annotations

from typing import Any, Final

from collimate_rl import GradeResult
from collimate_rl.grading import quotes, sealed_lines

__all__ = ["MAX_MESSAGE", "MAX_SHOWN", "feedback_text", "sealed_lines"]

#: Failing tests listed in one observation.
MAX_SHOWN: Final = 5
#: Characters of one grader message kept (a candidate may print megabytes).
MAX_MESSAGE: Final = 300


def _clip(value: Any) -> str:
    text = str(value)
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."


def feedback_text(
    result: GradeResult,
    turn: int,
    max_turns: int,
    code_found: bool,
    sealed: frozenset[str] = frozenset(),
) -> str:
    """What the model reads before its next attempt; ``sealed``: the lines
    of the ground truth no message may quote (:func:`sealed_lines`)."""
    detail = result.detail
    lines = [f"Attempt {turn} of {max_turns} did not pass."]
    if not code_found:
        lines.append("No code was found in your answer: put it in a ```python fenced block.")
    passed, total = detail.get("passed"), detail.get("total")
    if isinstance(passed, int) and isinstance(total, int) and total:
        lines.append(f"{passed} of {total} tests passed.")
    load_error = detail.get("load_error")
    if load_error:
        shown = "" if quotes(str(load_error), sealed) else f": {_clip(load_error)}"
        lines.append(f"Your code failed to load{shown}")
    if detail.get("timeout"):
        lines.append("Your code ran out of time.")
    if detail.get("memory_error"):
        lines.append("Your code ran out of memory.")
    failed = [f for f in detail.get("failed") or [] if isinstance(f, dict)]
    for entry in failed[:MAX_SHOWN]:
        index = entry.get("index")
        number = index + 1 if isinstance(index, int) else "?"
        reason = str(entry.get("reason") or "failed").replace("_", " ")
        message = entry.get("message")
        if message and quotes(str(message), sealed):
            message = None
        lines.append(f"- test {number}: {reason}" + (f": {_clip(message)}" if message else ""))
    failing = len(detail.get("failed_indices") or failed)
    if failing > min(len(failed), MAX_SHOWN):
        lines.append(f"- ... and {failing - min(len(failed), MAX_SHOWN)} more failing tests")
    lines.append("Fix your code and answer again with the whole program.")
    return "\n".join(lines)
