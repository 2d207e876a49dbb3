"""The text of a TRL completion, in either of its forms.

A standard dataset gives each completion as a string; a conversational one
as a list of messages (``[{"role": "assistant", "content": ...}]``, more
than one after tool calls). The model's answer is the last assistant
message; its content may be a string or a list of text parts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["completion_text"]


def _content(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            part["text"]
            for part in content
            if isinstance(part, Mapping) and isinstance(part.get("text"), str)
        ]
        if texts or not content:
            return "".join(texts)
    raise TypeError(f"{where}: a message's content must be text or text parts; got {content!r:.80}")


def completion_text(completion: Any, index: int) -> str:
    """The answer text of completion number ``index`` (for error messages)."""
    where = f"completion {index}"
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        return _content(completion.get("content"), where)
    if isinstance(completion, list):
        answers = [m for m in completion if isinstance(m, Mapping) and m.get("role") == "assistant"]
        if answers:
            return _content(answers[-1].get("content"), where)
        if not completion:
            return ""
        raise TypeError(f"{where}: a conversational completion without an assistant message")
    raise TypeError(
        f"{where}: expected a string or a list of messages; got {type(completion).__name__}"
    )
