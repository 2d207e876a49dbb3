"""Egress policies (docs/wire.md §4) and what this local backend can honestly enforce.

The engine enforces two modes per clone: ``open`` (the host's loopback-only
network namespace or the host network, per isolation level) and ``none`` (no
network at all). An ``allowlist`` is enforced fail-closed as ``none``: nothing
outside the list is reachable, and neither is anything inside it, which is
the safe direction. A ``denylist`` (``deny`` / ``preset``) would need a
filtering resolver and firewall this backend does not have, so it is refused
instead of silently running open.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..wire import egress_mode_of
from .engine.api import EgressMode, TemplateSpec
from .wire_errors import WireError, bad_request

VSOCK_ONLY_MESSAGE = "template is vsock-only"


@dataclass(frozen=True)
class EgressDecision:
    """What the client asked for and what the engine will enforce."""

    requested: str  # open | none | allowlist
    enforced: EgressMode

    def describe(self) -> dict[str, str]:
        """The response field telling the client what is really in force."""
        out = {"requested": self.requested, "enforced": self.enforced}
        if self.requested in ("allowlist", "denylist"):
            out["note"] = f"{self.requested} is enforced fail-closed as none by the local backend"
        return out


def _requested_mode(policy: Mapping[str, Any]) -> str:
    try:
        return egress_mode_of(policy)
    except ValueError as exc:
        raise bad_request(str(exc)) from None


def decide_egress(policy: Any, template: TemplateSpec) -> EgressDecision | None:
    """Validate a request's ``egress`` against a template.

    ``None`` (no policy sent) returns ``None``: the template's default applies.
    """
    if policy is None:
        return None
    if not isinstance(policy, Mapping):
        raise bad_request("egress must be an object")
    if not template.networked:
        raise WireError(400, "bad_request", VSOCK_ONLY_MESSAGE)
    mode = _requested_mode(policy)
    if mode == "denylist":
        raise bad_request(
            "egress denylist/preset cannot be enforced by the local backend (it has no filtering "
            "resolver); use mode 'none', 'open' or an allowlist (enforced fail-closed as none)"
        )
    if mode == "allowlist":
        allow = policy.get("allow", [])
        if not isinstance(allow, list) or not all(isinstance(a, str) for a in allow):
            raise bad_request("egress.allow must be a list of strings")
        return EgressDecision(requested="allowlist", enforced="none")
    return EgressDecision(requested=mode, enforced="open" if mode == "open" else "none")
