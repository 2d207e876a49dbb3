"""What a model reads back from a Python tool call: one cell's outcome as
plain text.

The three framework tools (verl's ``BaseTool``, skyrl-gym's ``ToolGroup``,
TRL's tool callables) all hand the model a string, and a policy learns from
what that string says, so they share one rendering: stdout, then stderr,
then the trailing expression's value, then the error with its trimmed
traceback, then a note when the cell timed out, restarted the interpreter
or was cut. Capped as a whole (``limit`` characters, the middle dropped and
marked), since a tool result goes back into the context window.
"""

from __future__ import annotations

from ..kernel._state import KERNEL_ERRORS, CellResult

__all__ = ["cell_text", "DEFAULT_TOOL_TEXT_LIMIT"]

#: characters of one tool result a model gets back by default
DEFAULT_TOOL_TEXT_LIMIT = 8_000
EMPTY = "(no output)"


def cell_text(result: CellResult, *, limit: int = DEFAULT_TOOL_TEXT_LIMIT) -> str:
    """``result`` as the text a model reads: the cell's own output and
    value, its error (traceback of the cell's frames) and what happened to
    the interpreter, at most ``limit`` characters."""
    parts: list[str] = []
    if result.stdout:
        parts.append(result.stdout.rstrip("\n"))
    if result.stderr:
        parts.append("[stderr]\n" + result.stderr.rstrip("\n"))
    if result.value is not None:
        parts.append(result.value)
    if result.error is not None and _own_error(result):
        parts.append((result.error.traceback or str(result.error)).rstrip("\n"))
    parts.extend(_notes(result))
    return _cap("\n".join(parts) if parts else EMPTY, limit)


def _own_error(result: CellResult) -> bool:
    """The error is the cell's own exception (shown with its traceback), not
    the interpreter's interrupt or loss (said in a note)."""
    return not result.timed_out and (result.error is None or result.error.type not in KERNEL_ERRORS)


def _notes(result: CellResult) -> list[str]:
    """What happened to the cell and the interpreter, and why: a policy
    learns from it which of its own actions cost it its state."""
    notes = []
    if result.timed_out and not result.restarted:
        notes.append("[the cell timed out and was interrupted; earlier names are kept]")
    elif result.timed_out:
        notes.append("[the cell timed out]")
    if result.restarted:
        why = result.note or (result.error.message if result.error is not None else "")
        reason = f": {_one_line(why)}" if why else ""
        notes.append(f"[the interpreter was restarted{reason}; every earlier name is gone]")
    if result.truncated:
        notes.append("[output truncated]")
    return notes


def _one_line(text: str, limit: int = 500) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _cap(text: str, limit: int) -> str:
    if limit <= 0 or len(text) <= limit:
        return text
    marker = f"\n[... {len(text) - limit} characters cut ...]\n"
    keep = max(limit - len(marker), 0)
    head = keep * 2 // 3
    return text[:head] + marker + text[len(text) - (keep - head) :]
