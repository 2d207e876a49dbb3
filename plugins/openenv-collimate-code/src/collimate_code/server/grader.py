"""Where the server grades: one collimate-rl client per server process.

Every session's ``step`` runs in a thread of its own (OpenEnv's session
executors) and calls ``grade`` on this one client, so concurrent submissions
are coalesced into packs by core. The target comes from the server's
environment as ``connect()`` reads it (``$COLLIMATE_SERVE_SOCKET``,
``$COLLIMATE_API_KEY``, ``$COLLIMATE_SERVE_URL``, the in-sandbox SESSION
socket, ...): a provider passes it as ``env_vars``.
"""

from __future__ import annotations

import os
import threading

from collimate_rl import SessionClient, connect

__all__ = ["TEMPLATE_ENV", "TIMEOUT_ENV", "grader_client", "grader_template", "grader_timeout"]

TEMPLATE_ENV = "COLLIMATE_CODE_GRADER_TEMPLATE"
TIMEOUT_ENV = "COLLIMATE_CODE_TIMEOUT_S"
DEFAULT_TEMPLATE = "dkr-python311"

_lock = threading.Lock()
_client: SessionClient | None = None


def grader_client() -> SessionClient:
    """The process's client (made on first use)."""
    global _client
    with _lock:
        if _client is None:
            _client = connect()
        return _client


def grader_template() -> str:
    return os.environ.get(TEMPLATE_ENV) or DEFAULT_TEMPLATE


def grader_timeout() -> int:
    raw = os.environ.get(TIMEOUT_ENV) or "30"
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"${TIMEOUT_ENV} must be whole seconds, got {raw!r}") from None
    if value <= 0:
        raise ValueError(f"${TIMEOUT_ENV} must be positive, got {value}")
    return value
