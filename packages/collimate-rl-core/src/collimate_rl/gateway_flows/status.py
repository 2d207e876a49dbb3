"""What a bake asks for (:class:`Ready`) and what the gateway says about it
(:class:`TemplateStatus`), plus the per-tier fork cap the group flow chunks by.

Plain data, no I/O: the sync and async flows share all of it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ..sandbox._state import wire_number
from ..wire import ready_body

__all__ = ["BAKE_PHASES", "TIER_FORK_CAP", "Ready", "TemplateStatus", "fork_cap"]

#: The bake's progress phases in order; ``Failed`` is an end, not a step.
BAKE_PHASES: Final[tuple[str, ...]] = ("Pending", "Converting", "Distributing", "Live")

#: Children one ``fork`` call may ask for, per key tier (docs/wire.md §3).
TIER_FORK_CAP: Final[Mapping[str, int]] = {"demo": 4, "pro": 32, "ent": 64}


def fork_cap(client: Any) -> int:
    """The per-call fork cap for ``client``'s key tier.

    A client that names no known tier gets the pro cap: a group still chunks,
    and a server with a lower cap answers the first call with a 400.
    """
    return TIER_FORK_CAP.get(str(getattr(client, "tier", "")), TIER_FORK_CAP["pro"])


@dataclass
class Ready:
    """When a baked template counts as ready (the wire's ``ReadySpec``).

    ``cmd`` must exit 0, or ``http`` must answer 2xx (``http`` wins when both
    are set; ``http_timeout_s`` bounds the probing). ``ports`` become
    per-sandbox ``endpoints``; ``env`` is set in the guest at bake time.
    ``network=True`` asks for a guest NIC so rollouts can carry an egress
    policy; ``ports`` and ``http`` imply it. A NIC is pro/ent only.
    """

    cmd: str = ""
    http: str = ""
    http_timeout_s: int = 0
    ports: list[int] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    network: bool = False

    def __post_init__(self) -> None:
        for port in self.ports:
            if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
                raise ValueError(f"Ready.ports entries must be TCP ports 1-65535, got {port!r}")
        if not isinstance(self.http_timeout_s, int) or self.http_timeout_s < 0:
            raise ValueError(
                f"Ready.http_timeout_s must be an int >= 0, got {self.http_timeout_s!r}"
            )
        for key in self.env:
            if not isinstance(key, str) or not key:
                raise ValueError(f"Ready.env keys must be non-empty strings, got {key!r}")

    @property
    def networked(self) -> bool:
        """The template gets a NIC (asked for, or implied by ports / http)."""
        return bool(self.network or self.ports or self.http)

    def to_wire(self) -> dict[str, Any] | None:
        """The ``ready`` body: only the fields that were set (``None`` if none)."""
        return ready_body(**dataclasses.asdict(self)) or None  # its fields are the wire's


@dataclass
class TemplateStatus:
    """One reading of ``GET /v1/templates/{id}``: the bake phase and the pool.

    ``declared`` is the width asked for, ``warm`` / ``frozen`` the spares the
    pool really holds (``per_node`` splits them by node). ``error`` and
    ``build_fails`` explain a ``Failed`` bake. ``raw`` is the whole answer.
    """

    id: str
    name: str
    image: str
    phase: str
    declared: int
    warm: int
    frozen: int
    per_node: list[dict[str, Any]]
    converge_state: str
    bake_mode: str
    raw: dict[str, Any]
    error: str = ""
    build_fails: int = 0

    @property
    def total(self) -> int:
        """Spares held, warm and frozen together."""
        return self.warm + self.frozen

    @property
    def converged(self) -> bool:
        """The pool reached the declared width (the server's own verdict)."""
        return self.converge_state == "converged"

    @property
    def live(self) -> bool:
        """The bake finished: sandboxes can be created from it."""
        return self.phase == "Live"

    @property
    def failed(self) -> bool:
        return self.phase == "Failed"

    @property
    def phase_rank(self) -> int:
        """0 (Pending) to 3 (Live); ``Failed`` and unknown phases rank 0."""
        return BAKE_PHASES.index(self.phase) if self.phase in BAKE_PHASES else 0

    @classmethod
    def from_response(cls, body: Mapping[str, Any]) -> TemplateStatus:
        return cls(
            id=str(body.get("id") or ""),
            name=str(body.get("name") or ""),
            image=str(body.get("image") or ""),
            phase=str(body.get("phase") or "Pending"),
            declared=wire_number(body.get("declared"), int),
            warm=wire_number(body.get("warm"), int),
            frozen=wire_number(body.get("frozen"), int),
            per_node=[dict(n) for n in body.get("per_node") or [] if isinstance(n, Mapping)],
            converge_state=str(body.get("converge_state") or "converging"),
            bake_mode=str(body.get("bake_mode") or ""),
            raw=dict(body),
            error=str(body.get("error") or ""),
            build_fails=wire_number(body.get("build_fails"), int),
        )

    def summary(self) -> str:
        """One line for logs and the CLI."""
        line = f"{self.id or '?'} {self.phase}: {self.total}/{self.declared} ready"
        line += f" ({self.warm} warm, {self.frozen} frozen)"
        if self.error:
            line += f"; error after {self.build_fails} build(s): {self.error}"
        return line
