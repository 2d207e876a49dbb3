"""Pulling the candidate program out of a model completion."""

from __future__ import annotations

import re
import textwrap
from typing import Final

__all__ = ["extract_code"]

_THINK: Final = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
# An opening fence (``` or ~~~, 3+), an optional info string, the body, and
# the matching closing fence or the end of the text (a truncated generation).
_FENCE: Final = re.compile(
    r"^[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)\n(?P<body>.*?)"
    r"(?:^[ \t]*(?P=fence)[ \t]*$|\Z)",
    re.DOTALL | re.MULTILINE,
)
_PYTHON_TAGS: Final = frozenset({"", "python", "python3", "py", "py3", "python 3"})


def _defines(body: str, entry: str) -> bool:
    return re.search(rf"^\s*(?:async\s+)?def\s+{re.escape(entry)}\s*\(", body, re.M) is not None


def extract_code(completion: str, entry: str = "solve") -> str:
    """The code to grade from a completion.

    Reasoning inside ``<think>...</think>`` is ignored. Among fenced blocks,
    the LAST one defining ``def entry(`` wins (models revise: the final
    definition is the answer); failing that, the first Python-tagged or
    untagged block; failing that, the first block of any language. Without
    fences the whole completion is the code. Surrounding blank space is
    stripped.
    """
    text = _THINK.sub("", completion)
    blocks = [(m.group("info").strip().lower(), m.group("body")) for m in _FENCE.finditer(text)]
    if not blocks:
        return text.strip()
    defining = [body for _, body in blocks if _defines(body, entry)]
    if defining:
        return textwrap.dedent(defining[-1]).strip()
    python = [body for info, body in blocks if info.split(" ")[0] in _PYTHON_TAGS]
    return textwrap.dedent(python[0] if python else blocks[0][1]).strip()
