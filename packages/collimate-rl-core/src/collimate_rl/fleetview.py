"""The managed fleet as a gateway key sees it: :class:`FleetView`.

A managed customer has no ``kubectl`` (that is :class:`collimate_rl.Fleet`,
for people running their own control plane), yet wants to know how warm its
pools are and where they sit. Everything needed is already behind two
gateway routes the key can call: ``GET /v1/templates`` (the tenant's rows)
and ``GET /v1/templates/{id}`` (one template's pool: ``declared``,
``warm``, ``frozen``, ``per_node``, ``converge_state``). The view only reads
those, so it can show nothing the key could not already see; a template of
another tenant answers 404 and is listed under ``missing``, never shown.

Numbers are the gateway's own, summed. Two readings are deliberately
conservative: ``converged`` needs at least one sized template and every
sized one converged (nothing asked for is not "ready"), and ``warm_hit`` is
``None`` unless the caller hands in samples it measured itself (the server
does not know which of the caller's creates were warm).

The names and behaviour are those of the 0.8.0 release's ``fleetview``
module, so code written for it runs unchanged.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .errors import GatewayError
from .gateway_flows.status import TemplateStatus

__all__ = ["FleetStatus", "FleetView", "NodePool", "TemplateReader", "warm_hit_ratio"]

#: ``watch`` never polls faster than this, whatever ``interval`` says: the
#: view is a dashboard, and a tight loop would only load the gateway.
MIN_WATCH_INTERVAL_S = 0.5


class TemplateReader(Protocol):
    """The two calls the view makes; :class:`~collimate_rl.GatewayClient`
    has both."""

    def list_templates(self) -> list[dict[str, Any]]: ...

    def get_template(self, template_id: str) -> dict[str, Any]: ...


@dataclass
class NodePool:
    """What one node holds of the tenant's pools, summed over the templates
    the view includes.

    ``templates`` splits it: template id -> ``{"warm": w, "frozen": f}``.
    (Until 0.9.0 ``collimate_rl.NodePool`` named the many-node client, now
    :class:`~collimate_rl.MultiNodeClient`; this is the 0.8.0 meaning.)
    """

    node: str
    warm: int = 0
    frozen: int = 0
    templates: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def total(self) -> int:
        """Spares this node holds, warm and frozen together."""
        return self.warm + self.frozen

    def add(self, template_id: str, warm: int, frozen: int) -> None:
        """Count one template's share on this node."""
        self.warm += warm
        self.frozen += frozen
        self.templates[template_id] = {"warm": warm, "frozen": frozen}

    def as_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            **_spares(self),
            "templates": {tid: dict(split) for tid, split in self.templates.items()},
        }


@dataclass
class FleetStatus:
    """One poll of the fleet: every included template's status, the nodes
    they sit on, and the sums.

    ``raw`` keeps each ``GET /v1/templates/{id}`` answer as received, in
    the order of ``templates``.
    """

    templates: list[TemplateStatus] = field(default_factory=list)
    nodes: list[NodePool] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    declared: int = 0
    warm: int = 0
    frozen: int = 0
    warm_hit: float | None = None
    raw: list[dict[str, Any]] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Spares held fleet-wide, warm and frozen together."""
        return self.warm + self.frozen

    @property
    def converged(self) -> bool:
        """Every template with a declared width reports ``converged``, and
        there is at least one: an empty or unsized fleet is never reported
        ready."""
        sized = [t for t in self.templates if t.declared > 0]
        return bool(sized) and all(t.converged for t in sized)

    @property
    def nodes_reporting(self) -> int:
        return len(self.nodes)

    def summary(self) -> str:
        """One line for a log or a dashboard."""
        state = "converged" if self.converged else "converging"
        line = (
            f"{self.total:,} spares ({self.warm:,} warm / {self.frozen:,} frozen) "
            f"of {self.declared:,} declared — {state} — "
            f"{self.nodes_reporting} node(s), {len(self.templates)} template(s)"
        )
        if self.missing:
            line += f" (+{len(self.missing)} missing)"
        return line

    def as_dict(self) -> dict[str, Any]:
        """The status as plain JSON-ready data (each template as received)."""
        return {
            "declared": self.declared,
            **_spares(self),
            "converged": self.converged,
            "nodes_reporting": self.nodes_reporting,
            "warm_hit": self.warm_hit,
            "missing": list(self.missing),
            "nodes": [n.as_dict() for n in self.nodes],
            "templates": [t.raw for t in self.templates],
        }


def _spares(held: NodePool | FleetStatus) -> dict[str, int]:
    """The spares a node or the fleet holds, as its ``as_dict`` shows them."""
    return {"warm": held.warm, "frozen": held.frozen, "total": held.total}


def warm_hit_ratio(samples: Iterable[Mapping[str, Any]]) -> float | None:
    """The share of the caller's creates that hit a warm spare, over the
    samples that carry a ``warm_hit`` verdict; ``None`` when none does (no
    measurement is not a measurement of 0)."""
    verdicts = [bool(s["warm_hit"]) for s in samples if "warm_hit" in s]
    return sum(verdicts) / len(verdicts) if verdicts else None


def _count(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


class FleetView:
    """A read-only view of the tenant's pools over the gateway.

    ``template_ids`` fixes the templates to poll; without it, every
    template ``GET /v1/templates`` lists for the key is polled, except rows
    marked ``"visibility": "public"`` unless ``include_public``. A poll is
    one list call and one call per template: cheap at a dashboard's pace.
    """

    def __init__(
        self,
        client: TemplateReader,
        *,
        template_ids: Sequence[str] | None = None,
        include_public: bool = False,
    ) -> None:
        self._client = client
        self._explicit_ids = list(template_ids) if template_ids is not None else None
        self._include_public = include_public

    def template_ids(self) -> list[str]:
        """The ids a poll reads, in the order given or listed."""
        if self._explicit_ids is not None:
            return list(self._explicit_ids)
        return [
            str(row["id"])
            for row in self._client.list_templates()
            if row.get("id") and (self._include_public or row.get("visibility") != "public")
        ]

    def status(self, *, samples: Sequence[Mapping[str, Any]] | None = None) -> FleetStatus:
        """Read every included template once and sum them.

        A template the gateway answers 404 ``not_found`` for (deleted, or
        not the key's) is listed in ``missing``; any other error is raised,
        so an outage is never shown as an empty fleet. ``samples`` are the
        caller's own measurements (``{"warm_hit": bool}`` each), giving
        ``warm_hit``.
        """
        result = FleetStatus(warm_hit=warm_hit_ratio(samples) if samples else None)
        nodes: dict[str, NodePool] = {}
        for template_id in self.template_ids():
            try:
                body = self._client.get_template(template_id)
            except GatewayError as err:
                if err.code != "not_found":
                    raise
                result.missing.append(template_id)
                continue
            status = TemplateStatus.from_response(body)
            result.templates.append(status)
            result.raw.append(body)
            result.declared += status.declared
            result.warm += status.warm
            result.frozen += status.frozen
            for share in status.per_node:
                name = str(share.get("node", "?"))
                pool = nodes.setdefault(name, NodePool(node=name))
                pool.add(
                    status.id or template_id,
                    _count(share.get("warm", 0)),
                    _count(share.get("frozen", 0)),
                )
        result.nodes = [nodes[name] for name in sorted(nodes)]
        return result

    def watch(
        self,
        *,
        on_update: Callable[[FleetStatus], None] | None = None,
        interval: float = 2.0,
        timeout: float | None = None,
        until_converged: bool = False,
    ) -> FleetStatus:
        """Poll every ``interval`` seconds (0.5 at least), handing each
        status to ``on_update``.

        With ``until_converged`` it returns the first converged status and
        raises :class:`TimeoutError` (with the last summary) once
        ``timeout`` has passed; without, it is a dashboard loop that
        returns the last status when ``timeout`` has passed (never, if
        ``None``).
        """
        interval = max(MIN_WATCH_INTERVAL_S, interval)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            status = self.status()
            if on_update is not None:
                on_update(status)
            if until_converged and status.converged:
                return status
            if deadline is not None and time.monotonic() >= deadline:
                if until_converged:
                    raise TimeoutError(
                        f"the fleet did not converge within {timeout:g}s: {status.summary()}"
                    )
                return status
            time.sleep(interval)
