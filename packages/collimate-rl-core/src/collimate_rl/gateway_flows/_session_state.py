"""What both sessions share: :func:`template_id_of` and ``SessionState``
(what a session holds, how it reads a created sandbox and builds an exec).
``AsyncSession`` is written in ``collimate_rl/gateway_flows/_async/sessions.py``,
``Session`` generated from it; the public module is
``collimate_rl.gateway_flows.sessions``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ..egress import egress_policy
from ..errors import GatewayError

__all__ = ["SessionState", "log", "template_id_of"]

log = logging.getLogger("collimate_rl.session")


def template_id_of(template: Any) -> str:
    """A template id from an id string or anything with an ``id`` (a
    :class:`~collimate_rl.TemplateHandle`, an :class:`~collimate_rl.Env`)."""
    tid = template if isinstance(template, str) else getattr(template, "id", None)
    if not isinstance(tid, str) or not tid:
        raise ValueError(
            f"template must be a template id or a handle with one, got {template!r:.80}"
        )
    return tid


class SessionState:
    def __init__(
        self,
        template: Any,
        *,
        label: str | None,
        labels: Mapping[str, str] | None,
        egress: Mapping[str, Any] | None,
        default_timeout: int,
    ) -> None:
        self.template = template_id_of(template)
        self.label = label
        self.labels = dict(labels) if labels is not None else None
        self.egress = egress_policy(egress)
        self.default_timeout = default_timeout
        self.id: str | None = None
        self.raw_create: dict[str, Any] | None = None
        self.fork_time_ms: float | None = None
        self.create_time_ms: float | None = None
        self.endpoints: dict[str, str] = {}
        # groups forked from this session: closed with it, so a group the
        # caller never closed does not outlive its parent
        self._groups: list[Any] = []

    def _opened(self, answer: Mapping[str, Any]) -> None:
        sandbox_id = answer.get("id")
        if not isinstance(sandbox_id, str) or not sandbox_id:
            raise GatewayError(f"the gateway created a sandbox but sent no id: {answer!r:.200}")
        self.raw_create = dict(answer)
        self.id = sandbox_id
        for key in ("fork_time_ms", "create_time_ms"):
            value = answer.get(key)
            setattr(self, key, float(value) if isinstance(value, (int, float)) else None)
        self.endpoints = {str(k): str(v) for k, v in dict(answer.get("endpoints") or {}).items()}

    def _live_id(self, verb: str) -> str:
        if self.id is None:
            raise RuntimeError(f"cannot {verb} a session that is not open (use it in a with block)")
        return self.id

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.template!r}, sandbox={self.id or 'not open'})"
