"""Names a candidate declares at its top level and its tests use: a
candidate redefining one is judged wrong without running."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["IDENT", "code_only", "shadowed_names"]

_COMMENTS: Final = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_STRINGS: Final = re.compile(r'"(?:\\.|[^"\\\n])*"|`(?:\\.|[^`\\])*`')
_CHARS: Final = re.compile(r"'(?:\\[^'\n]{1,10}|[^'\\\n])'")
_JS_STRINGS: Final = re.compile(r"'(?:\\.|[^'\\\n])*'")
IDENT: Final = re.compile(r"[A-Za-z_$][\w$]*")

_DECLARES: Final = {
    "rust": re.compile(
        r"\b(?:struct|enum|union|trait|type|mod|fn|const|static|macro_rules\s*!)\s+"
        r"(?:mut\s+)?([A-Za-z_]\w*)|\bas\s+([A-Za-z_]\w*)\s*[;,}]"
    ),
    "go": re.compile(r"\b(?:func|type|var|const)\s+([A-Za-z_]\w*)"),
    "java": re.compile(r"\b(?:class|interface|enum|record)\s+([A-Za-z_]\w*)"),
    "javascript": re.compile(r"\b(?:function\s*\*?|class|var|let|const)\s*([A-Za-z_$][\w$]*)"),
    "typescript": re.compile(
        r"\b(?:function\s*\*?|class|var|let|const|type|interface|enum|namespace)\s*"
        r"([A-Za-z_$][\w$]*)"
    ),
}
#: Go's grouped declarations: ``var ( a = 1; b = 2 )``.
_GO_GROUP: Final = re.compile(r"\b(?:var|const|type)\s*\(([^()]*)\)")


def code_only(text: str, language: str) -> str:
    """``text`` with comments and string / character literals blanked
    (their words are not names); newlines and braces of code kept."""
    text = _COMMENTS.sub(" ", text)
    text = _STRINGS.sub('""', text)
    chars = _JS_STRINGS if language in ("javascript", "typescript") else _CHARS
    return chars.sub("''", text)


def _top_level(code: str, start: int) -> str:
    """The text of ``code`` from ``start`` that sits at brace depth 0 (the
    depth counted from the beginning of ``code``)."""
    depth, out = 0, []
    for i, ch in enumerate(code):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        elif depth == 0 and i >= start:
            out.append(ch)
            continue
        if i >= start:
            out.append(" " if depth else ch)
    return "".join(out)


def _declared(code: str, language: str) -> set[str]:
    names: set[str] = set()
    for m in _DECLARES[language].finditer(code):
        names.update(g for g in m.groups() if g)
    if language == "go":
        for group in _GO_GROUP.finditer(code):
            for line in group.group(1).splitlines():
                first = IDENT.match(line.strip())
                if first:
                    names.add(first.group())
    return names


def shadowed_names(language: str, candidate: str, tests: str, prompt: str | None) -> list[str]:
    """Names the candidate declares at its top level (past the prompt) that
    the tests use and neither the prompt nor the tests declare."""
    if language not in _DECLARES:
        return []
    code = code_only(candidate, language)
    start = 0
    if prompt and candidate.startswith(prompt):
        start = len(code_only(prompt, language))
    if language == "java":  # a nested class shadows as well as a top-level one
        own = _declared(code[start:], language)
    else:
        own = _declared(_top_level(code, start), language)
    tests_code = code_only(tests, language)
    used = set(IDENT.findall(tests_code))
    theirs = _declared(tests_code, language)
    if prompt:
        theirs |= _declared(code_only(prompt, language), language)
    return sorted((own & used) - theirs)
