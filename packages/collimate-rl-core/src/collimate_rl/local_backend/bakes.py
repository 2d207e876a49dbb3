"""Gateway bakes: a tenant's own templates, from ``POST /v1/templates`` to
``Live`` (or ``Failed``), and their warm pools.

A bake resolves its image to a local stand-in (see :mod:`.catalog`), then
really runs its ready check in a clone of the template it built: ``cmd``
must exit 0; ``http`` (which wins) must answer 2xx from inside the clone
within ``http_timeout_s``, with ``cmd``, when both are given, started first
in the background (the server the probe waits for). A failed build is tried
again; the second failure in a row ends the bake ``Failed`` with ``error``
and ``build_fails``. Phases: ``Pending`` (accepted) -> ``Converting``
(image resolved, ready check running) -> ``Distributing`` (its warm pool is
being forked) -> ``Live``.

Pool telemetry is the engine's real pool of ready clones of the template:
``declared`` is the width this node keeps warm (the declared width, or an
``expect``-ed one until ``release``, capped by the node), ``warm`` the ready
clones there now, ``frozen`` always 0 (no frozen-vCPU spares here).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import logging
import re
import shlex
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..seeds import fresh_seed
from ..wire import ready_body
from .catalog import resolve_image
from .engine.api import ExecJob, TemplateSpec
from .service import BackendService
from .tenants import Tenant
from .tiers import network_requires_pro, requires_paid
from .usage import rfc3339
from .wire_errors import WireError, bad_request

log = logging.getLogger("collimate_rl.local_backend")

BUILD_ATTEMPTS = 2  # consecutive build failures that end a bake Failed
DEFAULT_READY_TIMEOUT_S = 60.0
DISTRIBUTE_TIMEOUT_S = 120.0  # for the first warm clone of a built template
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


@dataclass(frozen=True)
class ReadySpec:
    cmd: str = ""
    http: str = ""
    http_timeout_s: float = 0.0
    ports: tuple[int, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    network: bool = False

    @property
    def networked(self) -> bool:
        return self.network or bool(self.ports) or bool(self.http)

    def wire(self) -> dict[str, Any]:
        return ready_body(**dataclasses.asdict(self))  # its fields are the wire's


def parse_ready(raw: Any) -> ReadySpec:
    """``ready`` of a bake, validated field by field (400 names the field)."""
    if raw is None:
        return ReadySpec()
    if not isinstance(raw, Mapping):
        raise bad_request(
            "ready must be an object {cmd?, http?, http_timeout_s?, ports?, env?, network?}"
        )
    unknown = set(raw) - {"cmd", "http", "http_timeout_s", "ports", "env", "network"}
    if unknown:
        raise bad_request(f"ready has unknown fields: {', '.join(sorted(unknown))}")
    cmd, http = raw.get("cmd") or "", raw.get("http") or ""
    if not isinstance(cmd, str) or not isinstance(http, str):
        raise bad_request("ready.cmd and ready.http must be strings")
    if http and not http.startswith(("http://", "https://")):
        raise bad_request(f"ready.http must be an http(s) URL, not {http!r}")
    timeout = raw.get("http_timeout_s") or 0
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0:
        raise bad_request("ready.http_timeout_s must be a number >= 0")
    ports = raw.get("ports") or []
    if not isinstance(ports, list) or not all(
        isinstance(p, int) and not isinstance(p, bool) and 0 < p < 65536 for p in ports
    ):
        raise bad_request("ready.ports must be a list of TCP ports (1-65535)")
    env = raw.get("env") or {}
    if not isinstance(env, Mapping) or not all(
        isinstance(k, str) and _env_ok(k) and isinstance(v, str) for k, v in env.items()
    ):
        raise bad_request("ready.env must map variable names (A-Z, 0-9, _) to string values")
    network = raw.get("network", False)
    if not isinstance(network, bool):
        raise bad_request("ready.network must be true or false")
    return ReadySpec(cmd, http, float(timeout), tuple(ports), tuple(sorted(env.items())), network)


@dataclass
class Bake:
    id: str
    tenant: str
    name: str
    image: str
    ready: ReadySpec
    width: int
    expected_width: int | None
    phase: str = "Pending"
    bake_mode: str = "built"
    error: str = ""
    build_fails: int = 0
    spec: TemplateSpec | None = None
    released_at: float | None = None
    task: asyncio.Task[None] | None = field(default=None, repr=False)


def template_id_for(tenant: str, name: str) -> str:
    """Deterministic: the same tenant baking the same name gets the same id."""
    digest = hashlib.sha256(f"{tenant}\0{name}".encode()).hexdigest()[:10]
    return f"{name.lower()}-{digest}"


class BakeBook:
    """Every tenant's baked templates."""

    def __init__(self, service: BackendService, *, max_warm: int) -> None:
        self.service = service
        self.max_warm = max(0, max_warm)
        self._bakes: dict[str, Bake] = {}

    # -- lookups -------------------------------------------------------------

    def get(self, tenant: Tenant, template_id: str) -> Bake:
        bake = self._bakes.get(template_id)
        if bake is None or bake.tenant != tenant.id:
            raise WireError(404, "not_found", f"no template: {template_id}")
        return bake

    def owned(self, tenant: Tenant) -> list[Bake]:
        return [b for b in self._bakes.values() if b.tenant == tenant.id]

    def runnable(self, tenant: Tenant, template_id: str) -> TemplateSpec | None:
        """The spec a sandbox of the tenant's own template runs, None if it
        is not the tenant's; 409 while it cannot run yet."""
        bake = self._bakes.get(template_id)
        if bake is None or bake.tenant != tenant.id:
            return None
        if bake.spec is None:
            detail = f": {bake.error}" if bake.phase == "Failed" else "; wait for it to go Live"
            raise WireError(
                409, "template_not_ready", f"template {template_id} is {bake.phase}{detail}"
            )
        return bake.spec

    # -- create --------------------------------------------------------------

    async def create(self, tenant: Tenant, body: Any) -> dict[str, Any]:
        if not isinstance(body, Mapping):
            raise bad_request("request body must be a JSON object")
        ready = parse_ready(body.get("ready"))
        # a networked ask answers network_requires_pro before baking's own 403
        if ready.networked and not tenant.tier.can_network:
            raise network_requires_pro()
        if not tenant.tier.can_bake:
            raise requires_paid(tenant.tier, "baking your own image (POST /v1/templates)")
        name, image = body.get("name"), body.get("image")
        if not isinstance(name, str) or not _NAME_RE.match(name):
            raise bad_request("name must be 1-63 letters, digits, '.', '_' or '-', starting alnum")
        if not isinstance(image, str) or not image.strip():
            raise bad_request("image must be a non-empty string (an image reference)")
        pool = body.get("pool")
        if not isinstance(pool, Mapping):
            raise bad_request("pool must be an object {width, cold_fraction?}")
        width = _width(pool.get("width"), "pool.width")
        cold = pool.get("cold_fraction", 0) or 0
        if isinstance(cold, bool) or not isinstance(cold, (int, float)) or not 0 <= cold <= 100:
            raise bad_request("pool.cold_fraction must be a number from 0 to 100")
        expected = body.get("expected_width")
        expected_width = None if expected is None else _width(expected, "expected_width")
        tid = template_id_for(tenant.id, name)
        existing = self._bakes.get(tid)
        if existing is not None:
            if existing.image != image or existing.ready != ready:
                raise WireError(
                    409,
                    "conflict",
                    f"template {name!r} exists with another image or ready check; delete it first",
                )
            # the same bake again: the widths it declares now are the ones in force
            existing.width = width
            if expected_width is not None:
                existing.expected_width = _clamp(expected_width, tenant)
                existing.released_at = None
            await self._apply_width(existing)
            return self._created(existing)
        bake = Bake(tid, tenant.id, name, image, ready, width, _clamp(expected_width, tenant))
        with contextlib.suppress(LookupError):
            if resolve_image(image, self.service.templates)[1] and not ready.wire():
                bake.bake_mode = "inherited_artifact"  # a catalog artifact, nothing to build
        self._bakes[tid] = bake
        bake.task = asyncio.ensure_future(self._run(bake))
        return self._created(bake)

    @staticmethod
    def _created(bake: Bake) -> dict[str, Any]:
        return {
            "id": bake.id,
            "name": bake.name,
            "image": bake.image,
            "phase": bake.phase,
            "bake_mode": bake.bake_mode,
        }

    # -- the bake itself ---------------------------------------------------------

    async def _run(self, bake: Bake) -> None:
        try:
            bake.phase = "Converting"
            spec: TemplateSpec | None = None
            while spec is None:
                try:
                    spec = await self._build(bake)
                except _BuildError as exc:
                    bake.build_fails += 1
                    bake.error = str(exc)
                    log.info("bake %s: build failed (%d): %s", bake.id, bake.build_fails, exc)
                    if bake.build_fails >= BUILD_ATTEMPTS:
                        bake.phase = "Failed"
                        return
            bake.spec = spec
            bake.error = ""
            bake.phase = "Distributing"
            await self._apply_width(bake)
            # Live once the pool has its first ready clone (none is asked for
            # at width 0); a pool that cannot fork one fails the bake
            deadline = time.monotonic() + DISTRIBUTE_TIMEOUT_S
            while self.declared(bake) and self.warm(bake) < 1 and not _closed(self.service):
                if time.monotonic() > deadline:
                    bake.phase, bake.build_fails = "Failed", max(bake.build_fails, 1)
                    bake.error = f"no warm clone came up within {DISTRIBUTE_TIMEOUT_S:g}s"
                    return
                await asyncio.sleep(0.05)
            bake.phase = "Live"
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug: the bake says so instead of hanging in a phase
            log.exception("bake %s failed", bake.id)
            bake.phase, bake.error = "Failed", f"internal error: {exc!r}"
            bake.build_fails = max(bake.build_fails, 1)

    async def _build(self, bake: Bake) -> TemplateSpec:
        try:
            base, _catalog = resolve_image(bake.image, self.service.templates)
        except LookupError as exc:
            raise _BuildError(str(exc)) from None
        spec = dataclasses.replace(
            base,
            id=f"{bake.id}@{bake.tenant}",
            networked=base.networked or bake.ready.networked,
            ports=bake.ready.ports or base.ports,
            warm_pool=0,
            env=base.env + bake.ready.env,
        )
        await self._ready_check(spec, bake.ready)
        return spec

    async def _ready_check(self, spec: TemplateSpec, ready: ReadySpec) -> None:
        if not ready.cmd and not ready.http:
            return
        timeout = ready.http_timeout_s or DEFAULT_READY_TIMEOUT_S
        if ready.http:
            start = f"({ready.cmd}) >/dev/null 2>&1 &\n" if ready.cmd else ""
            probe = (
                f"{shlex.quote(sys.executable)} -c {shlex.quote(_HTTP_PROBE)} "
                f"{shlex.quote(ready.http)} {timeout}"
            )
            source = start + probe
        else:
            source = ready.cmd
        try:
            clone = await self.service.engine.open_clone(spec, egress=None)
        except Exception as exc:
            raise _BuildError(f"could not start the template: {exc}") from exc
        try:
            out = await clone.run(ExecJob("command", source, fresh_seed(), timeout + 5.0))
        finally:
            await clone.close()
        if out.exit_code != 0:
            tail = out.output.decode("utf-8", "replace").strip()[-400:]
            what = f"ready http {ready.http}" if ready.http else "ready cmd"
            code = "timed out" if out.timed_out else f"exited {out.exit_code}"
            raise _BuildError(f"{what} {code}: {tail}" if tail else f"{what} {code}")

    # -- width and telemetry ---------------------------------------------------

    def declared(self, bake: Bake) -> int:
        width = bake.width
        if bake.expected_width is not None and bake.released_at is None:
            width = max(width, bake.expected_width)
        return min(width, self.max_warm)

    def warm(self, bake: Bake) -> int:
        count = getattr(self.service.engine, "warm_count", None)
        if bake.spec is None or count is None:
            return 0
        return int(count(bake.spec))

    async def _apply_width(self, bake: Bake) -> None:
        set_warm = getattr(self.service.engine, "set_warm", None)
        if bake.spec is not None and set_warm is not None and not _closed(self.service):
            await set_warm(bake.spec, self.declared(bake))

    def status(self, bake: Bake) -> dict[str, Any]:
        declared, warm = self.declared(bake), self.warm(bake)
        return {
            "id": bake.id,
            "name": bake.name,
            "image": bake.image,
            # a bake is its tenant's alone (the public catalog is /v1/images)
            "visibility": "private",
            "phase": bake.phase,
            "declared": declared,
            "warm": warm,
            "frozen": 0,
            "per_node": [{"node": "local", "warm": warm, "frozen": 0}],
            # converged: Live, and the warm pool holds the declared width
            "converge_state": "converged"
            if bake.phase == "Live" and warm >= declared
            else "converging",
            "bake_mode": bake.bake_mode,
            "error": bake.error,
            "build_fails": bake.build_fails,
            "width": bake.width,
            "expected_width": bake.expected_width if bake.released_at is None else None,
            "ready": bake.ready.wire(),
        }

    # -- session declarations ------------------------------------------------

    async def expect(self, tenant: Tenant, template_id: str, body: Any) -> dict[str, Any]:
        if not tenant.tier.can_expect:
            raise requires_paid(tenant.tier, "declaring a session width (expect)")
        bake = self._own(tenant, template_id)
        raw = body.get("width") if isinstance(body, Mapping) else None
        bake.expected_width = _clamp(_width(raw, "width"), tenant)
        bake.released_at = None
        await self._apply_width(bake)
        return {"id": bake.id, "expected_width": bake.expected_width}

    async def release(self, tenant: Tenant, template_id: str) -> dict[str, Any]:
        if not tenant.tier.can_expect:
            raise requires_paid(tenant.tier, "ending a session (release)")
        bake = self._own(tenant, template_id)
        if bake.released_at is None:
            bake.released_at = time.time()
            await self._apply_width(bake)
        return {"id": bake.id, "released": True, "released_at": rfc3339(bake.released_at)}

    def _own(self, tenant: Tenant, template_id: str) -> Bake:
        if template_id in self.service.templates and template_id not in self._bakes:
            raise WireError(
                403,
                "forbidden",
                f"{template_id} is a shared catalog image: bake it into your own template first",
            )
        return self.get(tenant, template_id)

    async def delete(self, tenant: Tenant, template_id: str, in_use: int) -> dict[str, Any]:
        if template_id in self.service.templates and template_id not in self._bakes:
            raise WireError(
                403,
                "forbidden",
                f"{template_id} is a shared catalog image: catalog rows cannot be deleted",
            )
        bake = self.get(tenant, template_id)
        if in_use:
            raise WireError(
                409, "template_in_use", f"template {template_id} backs {in_use} live sandboxes"
            )
        del self._bakes[template_id]
        await self._drop(bake)
        return {"deleted": True, "id": template_id}

    async def _drop(self, bake: Bake) -> None:
        if bake.task is not None and not bake.task.done():
            bake.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await bake.task
        set_warm = getattr(self.service.engine, "set_warm", None)
        if bake.spec is not None and set_warm is not None and not _closed(self.service):
            await set_warm(bake.spec, 0)

    async def close(self) -> None:
        for bake in list(self._bakes.values()):
            if bake.task is not None and not bake.task.done():
                bake.task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await bake.task


def _closed(service: BackendService) -> bool:
    return bool(getattr(service.engine, "closed", False))


class _BuildError(Exception):
    pass


def _width(raw: Any, name: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        raise bad_request(f"{name} must be an integer >= 0")
    return raw


def _clamp(width: int | None, tenant: Tenant) -> int | None:
    return None if width is None else min(width, tenant.tier.max_width)


def _env_ok(key: str) -> bool:
    return re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key) is not None


_HTTP_PROBE = """
import sys, time, urllib.request
url, limit = sys.argv[1], float(sys.argv[2])
deadline = time.monotonic() + limit
last = "no answer"
while time.monotonic() < deadline:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            if 200 <= r.status < 300:
                sys.exit(0)
            last = "HTTP %d" % r.status
    except Exception as exc:
        last = repr(exc)
    time.sleep(0.2)
print("no 2xx from %s within %gs: %s" % (url, limit, last))
sys.exit(1)
"""
