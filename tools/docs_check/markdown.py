"""Markdown as the checks read it: fenced blocks, and headings' anchors."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

FENCE = re.compile(
    r"^(?P<fence>```+|~~~+)(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=fence)\s*$",
    re.DOTALL | re.MULTILINE,
)
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.MULTILINE)


def strip_fences(markdown: str, keep: Iterable[str] = ()) -> str:
    """The Markdown with fenced blocks blanked (line count kept), but those
    whose language is in ``keep``."""
    keep = set(keep)

    def blank(m: re.Match[str]) -> str:
        if m.group("lang") in keep:
            return m.group(0)
        return "\n" * m.group(0).count("\n")

    return FENCE.sub(blank, markdown)


def slug(heading: str) -> str:
    """A heading's anchor as GitHub and MkDocs make it (lower case, code
    marks and punctuation dropped, spaces to hyphens)."""
    text = re.sub(r"`|\*\*|__", "", heading).strip().lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return re.sub(r" +", "-", text)


def anchors_of(path: Path) -> set[str]:
    text = strip_fences(path.read_text(encoding="utf-8"))
    return {slug(m.group(2)) for m in HEADING.finditer(text)}
