"""The gateway wire (docs/wire.md §3) on the local backend: Bearer ``col_*`` keys,
tenants, tiers, the catalog, bakes, sandboxes, forks and usage.

Served beside the daemon wire on the same ports: this router claims every
request that carries a Bearer key and every path only the gateway has
(``/v1/images``, ``/v1/templates``, ``/v1/sandboxes``, ``/v1/usage``), and
answers in the gateway's ``{"code", "message"}`` envelope. The daemon's own
codes for a missing session or template become ``not_found`` here (another
tenant's objects answer the same: no existence leak); the rest pass through.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

from .bakes import BakeBook
from .catalog import catalog_rows
from .egress import EgressDecision, decide_egress
from .engine.api import TemplateSpec
from .gateway_sandboxes import SandboxBook
from .routing import Request, Response, Router
from .service import BackendService
from .tenants import KeyRing, Tenant
from .tiers import network_requires_pro
from .usage import UsageMeter
from .wire_errors import WireError, bad_request

_GATEWAY_PATHS = ("/v1/images", "/v1/templates", "/v1/sandboxes", "/v1/usage")
_AS_NOT_FOUND = {"no_such_session", "no_template", "session_gone"}
KNOWN_PRESETS = ("rl-leakage",)


def gateway_error_body(err: WireError) -> dict[str, Any]:
    code = "not_found" if err.error_code in _AS_NOT_FOUND else err.error_code
    return {"code": code, "message": err.message}


def claims(request: Request) -> bool:
    """Bearer-keyed requests, and the paths only the gateway serves."""
    auth = request.headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        return True
    return any(request.path == p or request.path.startswith(p + "/") for p in _GATEWAY_PATHS)


def gateway_egress(policy: Any, spec: TemplateSpec) -> EgressDecision | None:
    """A sandbox's egress policy (docs/wire.md §4). As on the daemon wire, a policy
    on a vsock-only template is 400 ``template is vsock-only`` and an
    allowlist is enforced fail-closed as ``none``; a denylist (``deny`` /
    ``preset``) is enforced fail-closed as ``none`` too (this backend has no
    filtering resolver: everything it would block stays blocked, and so does
    the rest). The answer's ``egress`` says what is in force."""
    if isinstance(policy, Mapping) and spec.networked:
        mode = policy.get("mode")
        if mode == "denylist" or (mode is None and ("deny" in policy or "preset" in policy)):
            deny = policy.get("deny", [])
            if not isinstance(deny, list) or not all(isinstance(d, str) for d in deny):
                raise bad_request("egress.deny must be a list of strings")
            preset = policy.get("preset")
            if preset is not None and preset not in KNOWN_PRESETS:
                raise bad_request(
                    f"unknown egress preset {preset!r} (known: {', '.join(KNOWN_PRESETS)})"
                )
            return EgressDecision(requested="denylist", enforced="none")
    return decide_egress(policy, spec)


class Gateway:
    """The gateway's state over one service: keys, sandboxes, bakes, usage."""

    def __init__(self, service: BackendService, keys: KeyRing, *, max_warm: int = 4) -> None:
        self.service = service
        self.keys = keys
        self.meter = UsageMeter()
        self.sandboxes = SandboxBook(service, self.meter)
        self.bakes = BakeBook(service, max_warm=max_warm)

    async def close(self) -> None:
        await self.bakes.close()

    def template_for(self, tenant: Tenant, ref: Any) -> TemplateSpec:
        """What a sandbox of ``ref`` runs: the tenant's own template, else a
        public catalog template (a networked one needs a pro/ent key)."""
        if not isinstance(ref, str) or not ref:
            raise bad_request("template is required (a catalog id or one of your templates)")
        own = self.bakes.runnable(tenant, ref)
        if own is not None:
            return own
        spec = self.service.templates.get(ref)
        if spec is None:
            raise WireError(404, "not_found", f"no template: {ref}")
        if spec.networked and not tenant.tier.can_network:
            raise network_requires_pro()
        return spec


def build_gateway_router(gateway: Gateway) -> Router:
    router = Router("gateway", gateway_error_body, claims=claims)
    service, keys = gateway.service, gateway.keys
    boxes, bakes = gateway.sandboxes, gateway.bakes

    def tenant(req: Request) -> Tenant:
        return keys.tenant_for(req.headers.get("authorization"))

    def body_of(req: Request) -> Mapping[str, Any]:
        body = req.json()
        if body is None:
            return {}
        if not isinstance(body, Mapping):
            raise bad_request("request body must be a JSON object")
        return body

    async def health(_req: Request, _p: dict[str, str]) -> Response:
        return Response(200, service.health())

    async def images(req: Request, _p: dict[str, str]) -> Response:
        tenant(req)
        return Response(200, {"images": catalog_rows(service.templates)})

    async def create_template(req: Request, _p: dict[str, str]) -> Response:
        who = tenant(req)
        created = await bakes.create(who, req.json())
        gateway.meter.bake_asked(who.id)
        return Response(200, created)

    async def list_templates(req: Request, _p: dict[str, str]) -> Response:
        who = tenant(req)
        return Response(200, {"templates": [bakes.status(b) for b in bakes.owned(who)]})

    async def get_template(req: Request, p: dict[str, str]) -> Response:
        return Response(200, bakes.status(bakes.get(tenant(req), p["id"])))

    async def delete_template(req: Request, p: dict[str, str]) -> Response:
        who = tenant(req)
        return Response(200, await bakes.delete(who, p["id"], boxes.using(p["id"], who)))

    async def expect(req: Request, p: dict[str, str]) -> Response:
        return Response(200, await bakes.expect(tenant(req), p["id"], body_of(req)))

    async def release(req: Request, p: dict[str, str]) -> Response:
        return Response(200, await bakes.release(tenant(req), p["id"]))

    async def create_sandbox(req: Request, _p: dict[str, str]) -> Response:
        who = tenant(req)
        body = body_of(req)
        ref = body.get("template", body.get("template_id"))
        spec = gateway.template_for(who, ref)
        egress = gateway_egress(body.get("egress"), spec)
        return Response(200, await boxes.create(who, str(ref), spec, egress, body))

    async def list_sandboxes(req: Request, _p: dict[str, str]) -> Response:
        who = tenant(req)
        return Response(200, {"sandboxes": [boxes.info(b) for b in boxes.of(who)]})

    async def get_sandbox(req: Request, p: dict[str, str]) -> Response:
        return Response(200, boxes.info(boxes.get(tenant(req), p["id"])))

    async def delete_sandbox(req: Request, p: dict[str, str]) -> Response:
        deleted = await boxes.delete(tenant(req), p["id"])
        if not deleted:
            raise WireError(404, "not_found", f"no sandbox: {p['id']}")
        return Response(200, {"deleted": True, "id": p["id"]})

    async def exec_sandbox(req: Request, p: dict[str, str]) -> Response:
        return Response(200, await boxes.exec(tenant(req), p["id"], req.json()))

    async def fork(req: Request, p: dict[str, str]) -> Response:
        return Response(200, await boxes.fork(tenant(req), p["id"], body_of(req)))

    async def suspend(req: Request, p: dict[str, str]) -> Response:
        return Response(200, await boxes.suspend(tenant(req), p["id"]))

    async def resume(req: Request, p: dict[str, str]) -> Response:
        return Response(200, await boxes.resume(tenant(req), p["id"]))

    async def usage(req: Request, _p: dict[str, str]) -> Response:
        who = tenant(req)
        query = parse_qs(req.query, keep_blank_values=False)
        start = query.get("from", [None])[-1]
        end = query.get("to", [None])[-1]
        return Response(200, gateway.meter.summary(who.id, start, end))

    router.add("GET", "/v1/health", health)
    router.add("GET", "/v1/images", images)
    router.add("POST", "/v1/templates", create_template)
    router.add("GET", "/v1/templates", list_templates)
    router.add("GET", "/v1/templates/{id}", get_template)
    router.add("DELETE", "/v1/templates/{id}", delete_template)
    router.add("POST", "/v1/templates/{id}/expect", expect)
    router.add("POST", "/v1/templates/{id}/release", release)
    router.add("POST", "/v1/sandboxes", create_sandbox)
    router.add("GET", "/v1/sandboxes", list_sandboxes)
    router.add("GET", "/v1/sandboxes/{id}", get_sandbox)
    router.add("DELETE", "/v1/sandboxes/{id}", delete_sandbox)
    router.add("POST", "/v1/sandboxes/{id}/exec", exec_sandbox)
    router.add("POST", "/v1/sandboxes/{id}/fork", fork)
    router.add("POST", "/v1/sandboxes/{id}/suspend", suspend)
    router.add("POST", "/v1/sandboxes/{id}/resume", resume)
    router.add("GET", "/v1/usage", usage)
    return router
