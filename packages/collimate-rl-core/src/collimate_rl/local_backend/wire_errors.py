"""The daemon's error answers as one exception type.

Handlers raise :class:`WireError` anywhere below the router; the HTTP layer
turns it into the envelope of the wire being served. Keeping status, code and
message together in one place is what makes the codes of docs/wire.md auditable.
"""

from __future__ import annotations

from typing import Any


class WireError(Exception):
    """An error answer: HTTP ``status``, wire ``error_code`` and a human message."""

    def __init__(self, status: int, error_code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = error_code
        self.message = message

    def daemon_body(self) -> dict[str, Any]:
        """The daemon envelope ``{"error", "error_code"}``."""
        return {"error": self.message, "error_code": self.error_code}


def bad_request(message: str) -> WireError:
    return WireError(400, "bad_request", message)


def not_found_route(method: str, path: str) -> WireError:
    return WireError(404, "not_found", f"not found: {method} {path}")


def draining() -> WireError:
    return WireError(
        503, "draining", "node is draining: new work is refused, retry on another node"
    )


def at_capacity(limit: int) -> WireError:
    return WireError(
        503, "at_capacity", f"at capacity: {limit} execs/creates already in flight, retry later"
    )
