"""What both template flavours share: reading a bake's progress
(``reached``, ``raise_if_failed``, ...), checking a bake's arguments, and
``HandleFields`` (what a handle holds). ``AsyncTemplate`` and
``AsyncTemplateHandle`` are written in ``collimate_rl/gateway_flows/_async/templates.py``,
``Template`` and ``TemplateHandle`` generated from it; the public module is
``collimate_rl.gateway_flows.templates``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Literal

from ..errors import GatewayError, TemplateBakeFailed
from .status import Ready, TemplateStatus

__all__ = [
    "HandleFields",
    "OnUpdate",
    "WaitUntil",
    "bake_body",
    "check_until",
    "handle_fields",
    "raise_if_failed",
    "read_fields",
    "reached",
    "timed_out",
    "vanished",
]

WaitUntil = Literal["converged", "live"]
OnUpdate = Callable[[TemplateStatus], None]

#: The status carried by the error when the template vanished mid-wait.
_GONE: Final = {"phase": "Failed", "error": "the template was deleted (or never existed)"}


def check_until(until: str) -> None:
    if until not in ("converged", "live"):
        raise ValueError(f"until must be 'converged' or 'live', got {until!r}")


def reached(status: TemplateStatus, until: str) -> bool:
    # A full pool counts only once the bake is Live: a server may report the
    # pool converged while it is still distributing the artifact.
    return status.live and (status.converged or until == "live")


def raise_if_failed(template_id: str, status: TemplateStatus, until: str) -> None:
    # A finished bake outranks a stale error left from an earlier attempt.
    if status.failed and not reached(status, until):
        raise TemplateBakeFailed(
            f"the bake of template {template_id} failed after {status.build_fails} "
            f"build attempt(s): {status.error or 'the server gave no reason'}",
            status,
        )


def timed_out(template_id: str, status: TemplateStatus, timeout: float, until: str) -> TimeoutError:
    return TimeoutError(
        f"template {template_id} was not {until} within {timeout:g}s "
        f"(last seen: {status.summary()})"
    )


def vanished(template_id: str, exc: GatewayError) -> TemplateBakeFailed:
    status = TemplateStatus.from_response({**_GONE, "id": template_id})
    err = TemplateBakeFailed(f"template {template_id} disappeared during the bake", status)
    err.__cause__ = exc
    return err


def bake_body(ready: Ready | None, width: int) -> Any:
    if not isinstance(width, int) or isinstance(width, bool) or width < 1:
        raise ValueError(f"width must be an int >= 1, got {width!r}")
    if ready is not None and not isinstance(ready, Ready):
        raise TypeError(f"ready must be a Ready, got {type(ready).__name__}")
    return ready.to_wire() if ready is not None else None


class HandleFields:
    def __init__(
        self,
        template_id: str,
        *,
        name: str = "",
        image: str = "",
        declared: int = 0,
        bake_mode: str = "",
    ) -> None:
        if not template_id:
            raise GatewayError("the gateway answered a bake without a template id")
        self.id = template_id
        self.name = name
        self.image = image
        self.declared = declared
        self.bake_mode = bake_mode

    def _fill(self, status: TemplateStatus) -> TemplateStatus:
        # Right after a bake the server may not report the declared width yet.
        if not status.declared and self.declared:
            status.declared = self.declared
        status.name = status.name or self.name
        status.image = status.image or self.image
        status.id = status.id or self.id
        return status

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.id!r}, image={self.image!r})"


def handle_fields(answer: dict[str, Any], name: str, image: str, width: int) -> dict[str, Any]:
    return {
        "name": str(answer.get("name") or name),
        "image": str(answer.get("image") or image),
        "declared": width,
        "bake_mode": str(answer.get("bake_mode") or ""),
    }


def read_fields(status: TemplateStatus) -> dict[str, Any]:
    """A handle's fields as one reading of its template gives them (where
    :func:`handle_fields` takes them from a bake's answer)."""
    return {
        "name": status.name,
        "image": status.image,
        "declared": status.declared,
        "bake_mode": status.bake_mode,
    }
