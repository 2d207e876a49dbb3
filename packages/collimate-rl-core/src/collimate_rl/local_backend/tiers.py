"""The gateway's key tiers (docs/wire.md §3) and the rules each one carries.

One table, read by every gateway route, so the rules a tenant meets are
auditable in one place. The limits a real control plane takes from a
customer's plan (``pro`` / ``ent`` concurrency and width) are this local
backend's own plan: generous enough for a GRPO fan-out on one machine, and
still a limit that answers ``quota_exceeded`` instead of exhausting the host.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .wire_errors import WireError

TierName = Literal["demo", "pro", "ent"]

#: What a demo key is told when it asks for one sandbox more than its cap.
DEMO_LIMIT_MESSAGE = (
    "The demo tier runs up to {limit} sandboxes at once and this key already has "
    "{running} running. Delete one you are done with, or use a pro key for full-width "
    "runs (GRPO groups, your own images, networked templates)."
)


@dataclass(frozen=True)
class Tier:
    """What one tier may do."""

    name: TierName
    max_sandboxes: int  # live sandboxes at once, per tenant
    fork_cap: int  # children per single fork call
    can_bake: bool  # POST /v1/templates
    can_network: bool  # networked templates (ready.network / ports / http)
    can_expect: bool  # POST /v1/templates/{id}/expect and /release
    max_width: int  # expected width a template may declare (clamped to it)


TIERS: dict[str, Tier] = {
    "demo": Tier("demo", 8, 4, False, False, False, 8),
    "pro": Tier("pro", 1024, 32, True, True, True, 1024),
    "ent": Tier("ent", 4096, 64, True, True, True, 4096),
}


def tier_of_key(key: str) -> Tier | None:
    """The tier a ``col_<tier>_...`` key names, or ``None`` for a malformed key."""
    parts = key.split("_", 2)
    if len(parts) != 3 or parts[0] != "col" or not parts[2]:
        return None
    return TIERS.get(parts[1])


def over_sandbox_limit(tier: Tier, running: int, wanted: int) -> WireError:
    """The refusal for ``wanted`` more sandboxes when ``running`` are live:
    the demo tier's friendly ``demo_tier_limit``, a plan's ``quota_exceeded``."""
    if tier.name == "demo":
        message = DEMO_LIMIT_MESSAGE.format(limit=tier.max_sandboxes, running=running)
        return WireError(429, "demo_tier_limit", message)
    return WireError(
        429,
        "quota_exceeded",
        f"the {tier.name} plan runs up to {tier.max_sandboxes} sandboxes at once; "
        f"{running} are running and {wanted} more were asked for",
    )


def network_requires_pro() -> WireError:
    return WireError(
        403,
        "network_requires_pro",
        "networked templates (ready.network, ports, http) need a pro or ent key; "
        "demo templates are vsock-only",
    )


def requires_paid(tier: Tier, what: str) -> WireError:
    return WireError(403, "forbidden", f"{what} needs a pro or ent key (this key is {tier.name})")
