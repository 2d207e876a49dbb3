"""Finding a tool call in a completion, in skyrl-gym's own format.

skyrl-gym's multi-tool env (``searchcode``) reads a call as
``<tool><NAME>INPUT</NAME></tool>``: the first ``<tool>`` block of the
completion, and in it the first ``<NAME>...</NAME>`` pair, whose input is
stripped (here dedented first: code a model indents under its tag still
runs). A model trained on skyrl-gym's envs writes exactly that, so
``collimate_code`` reads the same shape (``<tool><python>print(1)</python></tool>``)
rather than inventing one. Reasoning inside ``<think>...</think>`` is left
out first: a call a model only considers while thinking is not a call.

A ``<tool>`` block with no well-formed inner tag is still a call, a broken
one: :class:`ToolCallError` carries the message the model reads back, as
skyrl-gym's envs show their parse errors as the observation.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from typing import Final

__all__ = ["ToolCall", "ToolCallError", "find_tool_call"]

_THINK: Final = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
_BLOCK: Final = re.compile(r"<tool>(.*?)</tool>", re.DOTALL)
_INNER: Final = re.compile(r"<(\w+)>(.*?)</\1>", re.DOTALL)


class ToolCallError(ValueError):
    """A ``<tool>`` block that names no tool: its message is for the model."""


@dataclass(frozen=True)
class ToolCall:
    """One call: the tool's name and its input (the code, for ``python``)."""

    name: str
    input: str


def find_tool_call(text: str) -> ToolCall | None:
    """The completion's tool call; None when it makes none (an answer).

    Raises :class:`ToolCallError` for a ``<tool>`` block without a
    ``<NAME>...</NAME>`` pair inside."""
    block = _BLOCK.search(_THINK.sub("", text))
    if block is None:
        return None
    inner = _INNER.search(block.group(1).strip())
    if inner is None:
        raise ToolCallError(
            "No valid tool call inside <tool>...</tool>: write <tool><python>CODE</python></tool>."
        )
    return ToolCall(inner.group(1), textwrap.dedent(inner.group(2)).strip())
