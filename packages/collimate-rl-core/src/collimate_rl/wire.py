"""Shapes of the wire contract (docs/wire.md), with no sockets involved.

Four jobs, all pure functions so the sync and async transports, the local
backend and the tests share one definition:

* build an exec request's body (docs/wire.md §1) from keyword arguments
  (:func:`build_exec_request`);
* build a bake's ``ready`` object (the client sends it, the local backend
  echoes it back);
* parse either error envelope into the right typed error;
* say whether a failed request is safe to send again (the retry-safety table).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from .errors import (
    CollimateDrainingError,
    CollimateError,
    DemoTierLimit,
    GatewayError,
)

__all__ = [
    "DEFAULT_EXEC_TIMEOUT_S",
    "MAX_EXEC_TIMEOUT_S",
    "OUTPUT_CAP_BYTES",
    "SEED_RE",
    "RETRY_SAFE_POST_CODES",
    "nothing_happened",
    "NEVER_RETRY_CODES",
    "RETRYABLE_STATUSES",
    "build_exec_request",
    "ready_body",
    "parse_error_envelope",
    "error_from_response",
    "is_retry_safe",
    "EGRESS_MODES",
    "egress_mode_of",
]

DEFAULT_EXEC_TIMEOUT_S: Final = 30
MAX_EXEC_TIMEOUT_S: Final = 3600
OUTPUT_CAP_BYTES: Final = 16 * 1024 * 1024
#: A valid seed: exactly 64 hex digits (``\Z``, not ``$``: a trailing newline is not a seed).
SEED_RE: Final = re.compile(r"\A[0-9a-fA-F]{64}\Z")

#: Error codes that prove the server did nothing: a non-idempotent POST
#: answered with one of these may be sent again.
RETRY_SAFE_POST_CODES: Final = frozenset({"at_capacity", "session_bringup_failed", "draining"})

#: Error codes a client must never retry, whatever the method.
NEVER_RETRY_CODES: Final = frozenset(
    {
        "session_gone",
        "demo_tier_limit",
        "quota_exceeded",
        "forbidden",
        "unauthorized",
        "not_found",
        "bad_request",
        "invalid_seed",
        "template_id_required",
        "no_template",
        "no_such_session",
        "insufficient_credits",
        "network_requires_pro",
        "port_not_exposed",
        "template_in_use",
    }
)

#: Statuses on which an idempotent request is retried.
RETRYABLE_STATUSES: Final = frozenset({429, 500, 502, 503, 504})

#: The modes of a request's ``egress`` policy.
EGRESS_MODES: Final[tuple[str, ...]] = ("open", "none", "allowlist", "denylist")


def egress_mode_of(policy: Mapping[str, Any]) -> str:
    """The mode an ``egress`` policy asks for: its ``mode``, else what its
    lists say (``allow``: allowlist; ``deny`` or a ``preset``: denylist),
    else open. ValueError for a mode that is not one of :data:`EGRESS_MODES`;
    the client and the server read a policy alike."""
    mode = policy.get("mode")
    if mode is not None:
        if mode not in EGRESS_MODES:
            raise ValueError(f"egress.mode must be one of {', '.join(EGRESS_MODES)}; got {mode!r}")
        return str(mode)
    if "allow" in policy:
        return "allowlist"
    if "deny" in policy or "preset" in policy:
        return "denylist"
    return "open"


def build_exec_request(
    *,
    command: str | None = None,
    commands: Sequence[Sequence[str]] | None = None,
    code: str | None = None,
    files: Sequence[Mapping[str, str]] | None = None,
    timeout_seconds: int | None = DEFAULT_EXEC_TIMEOUT_S,
    seed: str | None = None,
    egress: Mapping[str, Any] | None = None,
    template_id: str | None = None,
) -> dict[str, Any]:
    """The JSON body of an exec. Only fields that were given are sent, so a
    server's own defaults apply to the rest. Refuses a body with nothing to
    run before it costs a round trip."""
    if command is None and commands is None and code is None:
        raise ValueError("exec needs one of command=, commands= or code=")
    body: dict[str, Any] = {}
    if template_id is not None:
        body["template_id"] = template_id
    if command is not None:
        body["command"] = command
    if commands is not None:
        body["commands"] = [list(argv) for argv in commands]
    if code is not None:
        body["code"] = code
    if files:
        body["files"] = [{"path": f["path"], "content": f["content"]} for f in files]
    if timeout_seconds is not None:
        body["timeout_seconds"] = int(timeout_seconds)
    if seed is not None:
        body["seed"] = seed
    if egress is not None:
        body["egress"] = dict(egress)
    return body


def ready_body(
    *,
    cmd: str = "",
    http: str = "",
    http_timeout_s: float = 0,
    ports: Sequence[int] = (),
    env: Mapping[str, str] | Iterable[tuple[str, str]] = (),
    network: bool = False,
) -> dict[str, Any]:
    """A bake's ``ready`` object (docs/wire.md §3): only the fields that are
    set, so an empty result means "no ready check asked for"."""
    out: dict[str, Any] = {}
    if cmd:
        out["cmd"] = cmd
    if http:
        out["http"] = http
    if http_timeout_s:
        out["http_timeout_s"] = http_timeout_s
    if ports:
        out["ports"] = list(ports)
    if env:
        out["env"] = dict(env)
    if network:
        out["network"] = True
    return out


def parse_error_envelope(body: Any) -> tuple[str | None, str | None]:
    """``(error_code, message)`` from either envelope.

    The daemon sends ``{"error", "error_code"}``; the gateway ``{"code",
    "message"}``; a proxy may hand either wire the other's, so both are read
    everywhere. A body that is neither gives ``(None, None)``.
    """
    if isinstance(body, (bytes, bytearray)):
        try:
            body = json.loads(body)
        except ValueError:
            return None, None
    if not isinstance(body, Mapping):
        return None, None
    code = body.get("error_code") or body.get("code")
    message = body.get("message")
    if message is None:
        err = body.get("error")
        if isinstance(err, Mapping):  # {"error": {"code", "message"}} nesting
            code = code or err.get("code") or err.get("error_code")
            message = err.get("message")
        elif err is not None:
            message = str(err)
    return (str(code) if code is not None else None), (
        str(message) if message is not None else None
    )


def error_from_response(
    status: int, body: Any, *, gateway: bool, fallback_text: str = ""
) -> CollimateError:
    """The typed error for a non-2xx answer.

    ``draining`` becomes :class:`CollimateDrainingError` on either wire;
    ``demo_tier_limit`` becomes :class:`DemoTierLimit` with the server's
    message kept verbatim; other gateway answers are :class:`GatewayError`.
    """
    code, message = parse_error_envelope(body)
    if message is None:
        message = fallback_text.strip()[:500] or f"HTTP {status}"
    if code == "draining":
        return CollimateDrainingError(message, status, code, body=body)
    if code == "demo_tier_limit":
        return DemoTierLimit(message, status, code, body=body)
    if gateway:
        return GatewayError(message, status, code, body=body)
    return CollimateError(message, status, code, body=body)


def nothing_happened(error: CollimateError) -> bool:
    """Whether ``error`` proves the server did nothing with the request: it
    never left (``unsent``), or the server refused it before admitting it
    (``at_capacity``, ``session_bringup_failed``, ``draining``). Such a
    request, even an exec, may be sent to another node."""
    return bool(getattr(error, "unsent", False)) or error.error_code in RETRY_SAFE_POST_CODES


def is_retry_safe(*, idempotent: bool, status: int | None, error_code: str | None) -> bool:
    """Whether a request that got this answer may be sent again (docs/wire.md §5).

    ``status``/``error_code`` describe an HTTP answer; a transport failure
    is decided by the transport (it alone knows whether a byte was sent).
    """
    if error_code in NEVER_RETRY_CODES or status == 410:
        return False
    if error_code in RETRY_SAFE_POST_CODES:
        return True
    if not idempotent:
        return False
    return status in RETRYABLE_STATUSES
