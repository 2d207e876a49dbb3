"""The gateway's sandboxes: the service's sessions, owned by tenants.

A sandbox is a live session of the shared :class:`~.service.BackendService`
under an id of the gateway's (``sb_...``), so the node-local daemon wire
sees it as the node daemon of a real fleet would, while the gateway scopes
everything by tenant: another tenant's sandbox answers 404 ``not_found``,
exactly as one that never existed. The tier's concurrent-sandbox cap is
checked with slots reserved before any clone is forked, so concurrent
creates cannot overshoot it.

Suspend stops every process of the sandbox (SIGSTOP, see :mod:`.freeze`)
once its running exec is over; an exec sent while it is suspended answers
409 ``sandbox_suspended``; a suspended sandbox is never reaped for
idleness and its meter is paused. A fork copies the parent's files into
each child (see :mod:`.fork_copy`); children are sandboxes of their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .egress import EgressDecision
from .engine.api import TemplateSpec
from .engine.fork_clone import ForkClone
from .fork_copy import ForkCopyError, copy_state
from .freeze import continue_tree, stop_tree
from .ids import new_id
from .service import BackendService
from .sessions import Session
from .tenants import Tenant
from .tiers import over_sandbox_limit
from .usage import UsageMeter, rfc3339
from .wire_errors import WireError, bad_request

# children of one fork brought up at once: a wide fork must not take every
# in-flight slot of the server (others would get 503 at_capacity meanwhile)
FORK_OPENS_AT_ONCE = 8


@dataclass
class Sandbox:
    id: str
    tenant: str
    template: str  # the id the tenant knows (catalog id or own template id)
    spec: TemplateSpec
    egress: EgressDecision | None
    labels: dict[str, str] = field(default_factory=dict)
    label: str | None = None
    parent: str | None = None
    state: str = "running"  # running | suspended
    created_at: float = field(default_factory=time.time)

    def info(self, session: Session | None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "template": self.template,
            "state": self.state,
            "created_at": rfc3339(self.created_at),
            "labels": dict(self.labels),
        }
        if self.label is not None:
            out["label"] = self.label
        if self.parent is not None:
            out["parent"] = self.parent
        if session is not None:
            out["exec_count"] = session.exec_count
            if session.clone.endpoints:
                out["endpoints"] = dict(session.clone.endpoints)
        if self.egress is not None:
            out["egress"] = self.egress.describe()
        return out


def _labels(raw: Any, name: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in raw.items()
    ):
        raise bad_request(f"{name} must be an object of string keys to string values")
    return dict(raw)


class SandboxBook:
    """Tenant-owned sandboxes over the service's sessions."""

    def __init__(self, service: BackendService, meter: UsageMeter) -> None:
        self.service = service
        self.meter = meter
        self._boxes: dict[str, Sandbox] = {}
        self._reserved: dict[str, int] = {}
        service.on_destroy.append(self._forget)

    # -- lookups -------------------------------------------------------------

    def _forget(self, session: Session) -> None:
        box = self._boxes.pop(session.session_id, None)
        if box is not None:
            self.meter.sandbox_ended(box.id)

    def of(self, tenant: Tenant) -> Iterator[Sandbox]:
        return (b for b in list(self._boxes.values()) if b.tenant == tenant.id)

    def live_count(self, tenant: Tenant) -> int:
        return sum(1 for _ in self.of(tenant))

    def using(self, template_id: str, tenant: Tenant) -> int:
        return sum(1 for b in self.of(tenant) if b.template == template_id)

    def get(self, tenant: Tenant, sandbox_id: str) -> Sandbox:
        return self.get_owned(tenant.id, sandbox_id)

    def get_owned(self, tenant_id: str, sandbox_id: str) -> Sandbox:
        """The live sandbox ``sandbox_id`` of tenant ``tenant_id``, else 404."""
        box = self._boxes.get(sandbox_id)
        if box is None or box.tenant != tenant_id or not self.service.sessions.is_live(box.id):
            raise WireError(404, "not_found", f"no sandbox: {sandbox_id}")
        return box

    def session_of(self, box: Sandbox) -> Session | None:
        """The live session under ``box`` (``None`` once it is gone)."""
        try:
            return self.service.sessions.get(box.id)
        except WireError:
            return None

    def endpoints(self, box: Sandbox) -> dict[str, str]:
        """``{"<guest port>": "<host>:<port>"}``: where the sandbox's exposed
        guest ports are served on this host (empty when none is)."""
        session = self.session_of(box)
        return dict(session.clone.endpoints) if session is not None else {}

    def info(self, box: Sandbox) -> dict[str, Any]:
        session: Session | None = None
        with contextlib.suppress(WireError):
            session = self.service.sessions.get(box.id)
        return box.info(session)

    @contextlib.contextmanager
    def _reserve(self, tenant: Tenant, count: int) -> Iterator[None]:
        running = self.live_count(tenant) + self._reserved.get(tenant.id, 0)
        if running + count > tenant.tier.max_sandboxes:
            raise over_sandbox_limit(tenant.tier, running, count)
        self._reserved[tenant.id] = self._reserved.get(tenant.id, 0) + count
        try:
            yield
        finally:
            self._reserved[tenant.id] -= count

    # -- lifecycle -----------------------------------------------------------

    async def create(
        self,
        tenant: Tenant,
        template: str,
        spec: TemplateSpec,
        egress: EgressDecision | None,
        body: Mapping[str, Any],
    ) -> dict[str, Any]:
        labels = _labels(body.get("labels"), "labels")
        label = body.get("label")
        if label is not None and not isinstance(label, str):
            raise bad_request("label must be a string")
        started = time.perf_counter()
        with self._reserve(tenant, 1):
            session, fork_s = await self.service.open_session(
                spec, egress, session_id=new_id("sb")
            )
            box = Sandbox(session.session_id, tenant.id, template, spec, egress, labels, label)
            self._boxes[box.id] = box
        self.meter.sandbox_started(tenant.id, box.id)
        out: dict[str, Any] = {
            "id": box.id,
            "template": template,
            "fork_time_ms": round(fork_s * 1000.0, 3),
            "create_time_ms": round((time.perf_counter() - started) * 1000.0, 3),
        }
        if session.clone.endpoints:
            out["endpoints"] = dict(session.clone.endpoints)
        if egress is not None:
            out["egress"] = egress.describe()
        return out

    async def delete(self, tenant: Tenant, sandbox_id: str) -> bool:
        try:
            box = self.get(tenant, sandbox_id)
        except WireError:
            return False
        if box.state == "suspended":
            self._thaw(box)
        return await self.service.delete_session(box.id)

    async def exec(self, tenant: Tenant, sandbox_id: str, body: Any) -> dict[str, Any]:
        box = self.get(tenant, sandbox_id)
        if box.state == "suspended":
            raise WireError(
                409, "sandbox_suspended", f"sandbox {sandbox_id} is suspended: resume it first"
            )
        result = await self.service.exec_in_session(box.id, body)
        self.meter.exec_ran(tenant.id, float(result.get("exec_time_ms", 0.0)) / 1000.0)
        return result

    # -- suspend / resume ------------------------------------------------------

    def _clone(self, box: Sandbox) -> tuple[Session, ForkClone]:
        session = self.service.sessions.get(box.id)
        if not isinstance(session.clone, ForkClone):
            raise WireError(501, "not_implemented", "this engine cannot stop or copy a sandbox")
        return session, session.clone

    async def suspend(self, tenant: Tenant, sandbox_id: str) -> dict[str, Any]:
        box = self.get(tenant, sandbox_id)
        if box.state != "suspended":
            session, clone = self._clone(box)
            box.state = "suspended"  # new execs are refused from now on
            async with session.lock:  # the exec running (and those queued) finish first
                if self.service.sessions.is_live(box.id):
                    await asyncio.to_thread(stop_tree, clone.pid)
                    session.busy += 1  # not idle: never reaped while suspended
                    self.meter.sandbox_suspended(box.id)
        return {"id": box.id, "state": box.state}

    async def resume(self, tenant: Tenant, sandbox_id: str) -> dict[str, Any]:
        box = self.get(tenant, sandbox_id)
        if box.state == "suspended":
            self._thaw(box)
        return {"id": box.id, "state": box.state}

    def _thaw(self, box: Sandbox) -> None:
        session, clone = self._clone(box)
        continue_tree(clone.pid)
        session.busy = max(0, session.busy - 1)
        session.last_active = time.monotonic()
        box.state = "running"
        self.meter.sandbox_resumed(box.id)

    # -- fork --------------------------------------------------------------------

    async def fork(self, tenant: Tenant, sandbox_id: str, body: Any) -> dict[str, Any]:
        if not isinstance(body, Mapping):
            raise bad_request("request body must be a JSON object {count, labels?}")
        count = body.get("count", 1)
        cap = tenant.tier.fork_cap
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise bad_request("count must be an integer >= 1")
        if count > cap:
            raise bad_request(
                f"count {count} is over the {tenant.tier.name} tier's {cap} children per fork "
                "call: fork in chunks (fork_group does)"
            )
        per_child = _fork_labels(body.get("labels"), count)
        parent = self.get(tenant, sandbox_id)
        session, parent_clone = self._clone(parent)
        with self._reserve(tenant, count):
            async with session.lock:  # no exec of the parent runs during the copy
                if not self.service.sessions.is_live(parent.id):  # deleted meanwhile
                    raise WireError(404, "not_found", f"no sandbox: {sandbox_id}")
                sessions = await self._bring_up_children(parent, parent_clone, count, sandbox_id)
            children = []
            for s, labels in zip(sessions, per_child, strict=True):
                child = Sandbox(
                    s.session_id,
                    tenant.id,
                    parent.template,
                    parent.spec,
                    parent.egress,
                    {**parent.labels, **labels},
                    parent=parent.id,
                )
                self._boxes[child.id] = child
                self.meter.sandbox_started(tenant.id, child.id, forked=True)
                entry: dict[str, Any] = {"id": child.id}
                if s.clone.endpoints:
                    entry["endpoints"] = dict(s.clone.endpoints)
                children.append(entry)
        return {"parent": parent.id, "children": children}

    async def _bring_up_children(
        self, parent: Sandbox, parent_clone: ForkClone, count: int, sandbox_id: str
    ) -> list[Session]:
        """``count`` new sessions holding a copy of the parent's files, or
        none at all: whatever fails (a bring-up, the copy, the caller
        cancelled), every child made so far is destroyed before it raises."""
        gate = asyncio.Semaphore(FORK_OPENS_AT_ONCE)
        made: list[Session] = []

        async def open_child() -> None:
            async with gate:
                child, _ = await self.service.open_session(
                    parent.spec, parent.egress, session_id=new_id("sb")
                )
                made.append(child)

        try:
            opened = await asyncio.gather(
                *(open_child() for _ in range(count)), return_exceptions=True
            )
            failure = next((o for o in opened if isinstance(o, BaseException)), None)
            if failure is not None:
                raise failure
            clones = [c for c in (s.clone for s in made) if isinstance(c, ForkClone)]
            if len(clones) != len(made):
                raise WireError(501, "not_implemented", "this engine cannot fork")
            await copy_state(parent_clone, clones, frozen=parent.state == "suspended")
        except BaseException as exc:
            for child in made:
                with contextlib.suppress(Exception):
                    await self.service.delete_session(child.session_id)
            if isinstance(exc, ForkCopyError):
                raise WireError(
                    503,
                    "session_bringup_failed",
                    f"could not copy sandbox {sandbox_id} into its children: {exc}",
                ) from exc
            raise
        return made


def _fork_labels(raw: Any, count: int) -> list[dict[str, str]]:
    """``labels`` of a fork: one object for every child, or a list with one
    entry (a string label or an object) per child."""
    if raw is None:
        return [{} for _ in range(count)]
    if isinstance(raw, Mapping):
        return [_labels(raw, "labels") for _ in range(count)]
    if isinstance(raw, list):
        if len(raw) != count:
            raise bad_request(f"labels has {len(raw)} entries for {count} children")
        out = []
        for item in raw:
            if isinstance(item, str):
                out.append({"label": item})
            else:
                out.append(_labels(item, "labels[]"))
        return out
    raise bad_request("labels must be an object, or a list with one entry per child")
