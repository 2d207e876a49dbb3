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
from .connect_tokens import ConnectTokens
from .egress import EgressDecision, decide_egress
from .engine.api import TemplateSpec
from .gateway_connect import CONNECT_PATH, ConnectRoutes
from .gateway_sandboxes import SandboxBook
from .judging import judge_body
from .routing import Handler, Request, Response, Router
from .service import BackendService
from .tenants import KeyRing, Tenant
from .tiers import network_requires_pro
from .usage import UsageMeter
from .wire_errors import WireError, bad_request

_GATEWAY_PATHS = ("/v1/images", "/v1/templates", "/v1/sandboxes", "/v1/usage", CONNECT_PATH)
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
        self.connect = ConnectRoutes(self.sandboxes, ConnectTokens())

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
    """The gateway wire over ``gateway``: its routes (``GatewayRoutes``),
    answering in the gateway's envelope, and claiming what only it serves
    (``claims``) so that the daemon wire beside it never answers that."""
    router = Router("gateway", gateway_error_body, claims=claims)
    for method, pattern, handler in GatewayRoutes(gateway).table():
        router.add(method, pattern, handler)
    return router


def _body_of(req: Request) -> Mapping[str, Any]:
    """A request's JSON object; none is ``{}``, anything else is a 400."""
    body = req.json()
    if body is None:
        return {}
    if not isinstance(body, Mapping):
        raise bad_request("request body must be a JSON object")
    return body


class GatewayRoutes:
    """The handlers of the gateway wire's routes over one gateway, one
    method per route. Each finds the caller's tenant by its key first (a
    bad or missing key answers before anything is looked up), except
    health; the tenant's objects are only ever looked up as its own."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.service = gateway.service
        self.keys = gateway.keys
        self.boxes = gateway.sandboxes
        self.bakes = gateway.bakes

    def table(self) -> list[tuple[str, str, Handler]]:
        """(method, path pattern, handler), in the order they are matched."""
        return [
            ("GET", "/v1/health", self.health),
            ("GET", "/v1/stats", self.stats),
            ("GET", "/v1/images", self.images),
            ("POST", "/v1/templates", self.create_template),
            ("GET", "/v1/templates", self.list_templates),
            ("GET", "/v1/templates/{id}", self.get_template),
            ("DELETE", "/v1/templates/{id}", self.delete_template),
            ("POST", "/v1/templates/{id}/expect", self.expect),
            ("POST", "/v1/templates/{id}/release", self.release),
            ("POST", "/v1/sandboxes", self.create_sandbox),
            ("GET", "/v1/sandboxes", self.list_sandboxes),
            ("GET", "/v1/sandboxes/{id}", self.get_sandbox),
            ("DELETE", "/v1/sandboxes/{id}", self.delete_sandbox),
            ("POST", "/v1/sandboxes/{id}/exec", self.exec_sandbox),
            ("POST", "/v1/sandboxes/{id}/fork", self.fork),
            ("POST", "/v1/sandboxes/{id}/suspend", self.suspend),
            ("POST", "/v1/sandboxes/{id}/resume", self.resume),
            ("POST", "/v1/sandboxes/{id}/connect-url", self.connect_url),
            ("GET", "/connect", self.tunnel),
            ("GET", "/v1/usage", self.usage),
            ("POST", "/v1/judge", self.judge),
        ]

    def tenant(self, req: Request) -> Tenant:
        """The caller's tenant, by its Bearer key (else a 401)."""
        return self.keys.tenant_for(req.headers.get("authorization"))

    # -- judging (as the daemon wire does, for a tenant)

    async def judge(self, req: Request, _p: dict[str, str]) -> Response:
        self.tenant(req)
        return Response(200, await judge_body(self.service.languages, req.json()))

    # -- the catalog

    async def health(self, _req: Request, _p: dict[str, str]) -> Response:
        return Response(200, self.service.health())

    async def stats(self, req: Request, _p: dict[str, str]) -> Response:
        # node-wide counters (as open as /v1/health, which shows execs_run,
        # on the daemon wire); a Bearer key is checked like any other
        self.tenant(req)
        return Response(200, self.service.stats())

    async def images(self, req: Request, _p: dict[str, str]) -> Response:
        self.tenant(req)
        return Response(200, {"images": catalog_rows(self.service.templates)})

    # -- templates (bakes)

    async def create_template(self, req: Request, _p: dict[str, str]) -> Response:
        who = self.tenant(req)
        created = await self.bakes.create(who, req.json())
        self.gateway.meter.bake_asked(who.id)
        return Response(200, created)

    async def list_templates(self, req: Request, _p: dict[str, str]) -> Response:
        who = self.tenant(req)
        return Response(200, {"templates": [self.bakes.status(b) for b in self.bakes.owned(who)]})

    async def get_template(self, req: Request, p: dict[str, str]) -> Response:
        return Response(200, self.bakes.status(self.bakes.get(self.tenant(req), p["id"])))

    async def delete_template(self, req: Request, p: dict[str, str]) -> Response:
        who = self.tenant(req)
        in_use = self.boxes.using(p["id"], who)
        return Response(200, await self.bakes.delete(who, p["id"], in_use))

    async def expect(self, req: Request, p: dict[str, str]) -> Response:
        return Response(200, await self.bakes.expect(self.tenant(req), p["id"], _body_of(req)))

    async def release(self, req: Request, p: dict[str, str]) -> Response:
        return Response(200, await self.bakes.release(self.tenant(req), p["id"]))

    # -- sandboxes

    async def create_sandbox(self, req: Request, _p: dict[str, str]) -> Response:
        who = self.tenant(req)
        body = _body_of(req)
        ref = body.get("template", body.get("template_id"))
        spec = self.gateway.template_for(who, ref)
        egress = gateway_egress(body.get("egress"), spec)
        return Response(200, await self.boxes.create(who, str(ref), spec, egress, body))

    async def list_sandboxes(self, req: Request, _p: dict[str, str]) -> Response:
        who = self.tenant(req)
        return Response(200, {"sandboxes": [self.boxes.info(b) for b in self.boxes.of(who)]})

    async def get_sandbox(self, req: Request, p: dict[str, str]) -> Response:
        return Response(200, self.boxes.info(self.boxes.get(self.tenant(req), p["id"])))

    async def delete_sandbox(self, req: Request, p: dict[str, str]) -> Response:
        deleted = await self.boxes.delete(self.tenant(req), p["id"])
        if not deleted:
            raise WireError(404, "not_found", f"no sandbox: {p['id']}")
        return Response(200, {"deleted": True, "id": p["id"]})

    async def exec_sandbox(self, req: Request, p: dict[str, str]) -> Response:
        return Response(200, await self.boxes.exec(self.tenant(req), p["id"], req.json()))

    async def fork(self, req: Request, p: dict[str, str]) -> Response:
        return Response(200, await self.boxes.fork(self.tenant(req), p["id"], _body_of(req)))

    async def suspend(self, req: Request, p: dict[str, str]) -> Response:
        return Response(200, await self.boxes.suspend(self.tenant(req), p["id"]))

    async def resume(self, req: Request, p: dict[str, str]) -> Response:
        return Response(200, await self.boxes.resume(self.tenant(req), p["id"]))

    # -- services reached from outside (gateway_connect)

    async def connect_url(self, req: Request, p: dict[str, str]) -> Response:
        who = self.tenant(req)
        host = req.headers.get("host") or "127.0.0.1"
        return Response(200, self.gateway.connect.mint(who, p["id"], _body_of(req), host))

    async def tunnel(self, req: Request, _p: dict[str, str]) -> Response:
        # no key: the connect token in the URL is the credential
        return await self.gateway.connect.tunnel(req)

    # -- usage

    async def usage(self, req: Request, _p: dict[str, str]) -> Response:
        who = self.tenant(req)
        query = parse_qs(req.query, keep_blank_values=False)
        start = query.get("from", [None])[-1]
        end = query.get("to", [None])[-1]
        return Response(200, self.gateway.meter.summary(who.id, start, end))
