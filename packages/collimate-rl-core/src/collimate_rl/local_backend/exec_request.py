"""Turn an ExecRequest body (docs/wire.md §1) into a validated :class:`ExecJob`.

All the rules a client can trip over live here, in wire order, so the
daemon and (later) the gateway wire validate identically:

* exactly one of ``command`` / ``commands`` / ``code``, precedence
  ``command`` > ``commands`` > ``code``; none -> 400 ``bad_request``;
* ``commands`` argv lists are shell-quoted and joined by newlines into one
  ``sh -c`` script;
* ``files`` are TEXT: content not ending in ``\\n`` gets one appended (the
  heredoc rule of the real guest agent);
* ``timeout_seconds`` defaults to 30, must be a finite number in (0, 3600];
* source text and file paths hold no NUL byte (no process can take one);
* a field the wire does not define is refused by name (a misspelt
  ``timeout_second`` would otherwise run with the default);
* ``seed`` is 64 hex chars or 400 ``invalid_seed``; a fresh one is drawn when
  none was sent, so every run can be replayed.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping
from typing import Any

from ..seeds import fresh_seed, is_valid_seed
from ..wire import DEFAULT_EXEC_TIMEOUT_S, MAX_EXEC_TIMEOUT_S
from .engine.api import ExecJob
from .wire_errors import WireError, bad_request


def _source(body: Mapping[str, Any]) -> tuple[str, str]:
    command = body.get("command")
    if command is not None:
        if not isinstance(command, str):
            raise bad_request("command must be a string")
        return "command", _no_nul(command, "command")
    commands = body.get("commands")
    if commands is not None:
        return "command", join_commands(commands)
    code = body.get("code")
    if code is not None:
        if not isinstance(code, str):
            raise bad_request("code must be a string")
        return "code", _no_nul(code, "code")
    raise bad_request("exactly one of command, commands or code is required")


#: The fields of an ExecRequest (a one-shot's ``template_id`` and ``egress``
#: included; ``id`` names the request in its answer).
EXEC_FIELDS = frozenset(
    {
        "template_id",
        "command",
        "commands",
        "code",
        "files",
        "timeout_seconds",
        "seed",
        "egress",
        "id",
    }
)


def check_fields(body: Mapping[str, Any], allowed: frozenset[str], what: str) -> None:
    """400 ``bad_request`` naming the first field ``allowed`` lacks."""
    unknown = sorted(str(k) for k in body if k not in allowed)
    if unknown:
        raise bad_request(
            f"unknown field {unknown[0]!r} in {what}; "
            f"expected some of: {', '.join(sorted(allowed))}"
        )


def _no_nul(text: str, what: str) -> str:
    if "\0" in text:
        raise bad_request(f"{what} must not contain a NUL character")
    return text


def join_commands(commands: Any) -> str:
    """``[["echo", "a b"], ["ls"]]`` -> ``"echo 'a b'\\nls"``."""
    if not isinstance(commands, list):
        raise bad_request("commands must be a list of argv lists")
    lines = []
    for argv in commands:
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise bad_request("each entry of commands must be a non-empty list of strings")
        lines.append(shlex.join(argv))
    return _no_nul("\n".join(lines), "commands")


def _files(raw: Any) -> tuple[tuple[str, str], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise bad_request("files must be a list of {path, content}")
    out = []
    for item in raw:
        if not isinstance(item, Mapping):
            raise bad_request("each file must be an object {path, content}")
        path, content = item.get("path"), item.get("content")
        if not isinstance(path, str) or not path or "\0" in path:
            raise bad_request("file path must be a non-empty string")
        if not isinstance(content, str):
            raise bad_request(f"file content must be a string (text): {path}")
        if not content.endswith("\n"):
            content += "\n"
        out.append((path, content))
    return tuple(out)


def _timeout(raw: Any) -> float:
    if raw is None:
        return float(DEFAULT_EXEC_TIMEOUT_S)
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise bad_request("timeout_seconds must be a number")
    if not math.isfinite(raw) or raw <= 0:
        raise bad_request(f"timeout_seconds must be a positive finite number, not {raw!r}")
    if raw > MAX_EXEC_TIMEOUT_S:
        raise bad_request(f"timeout_seconds must be at most {MAX_EXEC_TIMEOUT_S}")
    return float(raw)


def _seed(raw: Any) -> str:
    if raw is None:
        return fresh_seed()
    if not is_valid_seed(raw):
        raise WireError(400, "invalid_seed", "seed must be 64 hex characters (32 bytes)")
    return raw


def parse_exec_body(body: Any) -> ExecJob:
    """Validate an ExecRequest body (``template_id`` and ``egress`` are the
    caller's business) into the job the engine runs."""
    if not isinstance(body, Mapping):
        raise bad_request("request body must be a JSON object")
    kind, source = _source(body)
    files = _files(body.get("files"))
    timeout_s = _timeout(body.get("timeout_seconds"))
    seed = _seed(body.get("seed"))
    return ExecJob(
        kind="command" if kind == "command" else "code",
        source=source,
        seed=seed,
        timeout_s=timeout_s,
        files=files,
    )


def format_timeout(timeout_s: float) -> str:
    """``timeout after 5s`` (integral) or ``timeout after 0.5s``."""
    shown = int(timeout_s) if float(timeout_s).is_integer() else timeout_s
    return f"timeout after {shown}s"
