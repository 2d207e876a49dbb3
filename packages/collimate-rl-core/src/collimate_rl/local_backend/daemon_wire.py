"""The daemon wire (docs/wire.md §2): routes of the node-local ``serve`` daemon.

Thin by design: each handler parses the path and body, calls the shared
:class:`~.service.BackendService`, and shapes the answer. Admin routes
(``/v1/admin/...``) are not part of the published wire; they answer only to
loopback and unix-socket clients.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .exec_request import EXEC_FIELDS, check_fields
from .judging import judge_body
from .routing import Request, Response, Router
from .service import BackendService
from .wire_errors import WireError


def daemon_error_body(err: WireError) -> dict[str, Any]:
    return err.daemon_body()


_CREATE_FIELDS = frozenset({"template_id", "egress", "env"})  # (env: an app server's, per session)


def _body(req: Request, allowed: frozenset[str], what: str) -> Any:
    """The JSON body, its fields checked against the wire's (a non-object
    body is the service's to refuse)."""
    body = req.json()
    if isinstance(body, dict):
        check_fields(body, allowed, what)
    return body


def build_daemon_router(service: BackendService, *, on_drain: Callable[[], None]) -> Router:
    """The daemon routes over ``service``. ``on_drain`` starts a drain (the
    server decides what stopping means: exit the process, or stop a thread)."""
    router = Router("daemon", daemon_error_body)

    async def health(_req: Request, _p: dict[str, str]) -> Response:
        return Response(200, service.health())

    async def list_sessions(_req: Request, _p: dict[str, str]) -> Response:
        return Response(200, service.list_sessions())

    async def create_session(req: Request, _p: dict[str, str]) -> Response:
        return Response(
            201, await service.create_session(_body(req, _CREATE_FIELDS, "a session create"))
        )

    async def get_session(_req: Request, p: dict[str, str]) -> Response:
        return Response(200, service.get_session(p["id"]))

    async def exec_session(req: Request, p: dict[str, str]) -> Response:
        return Response(
            200, await service.exec_in_session(p["id"], _body(req, EXEC_FIELDS, "an exec"))
        )

    async def delete_session(_req: Request, p: dict[str, str]) -> Response:
        deleted = await service.delete_session(p["id"])
        return Response(200 if deleted else 404, {"deleted": deleted, "session_id": p["id"]})

    async def exec_once(req: Request, _p: dict[str, str]) -> Response:
        return Response(200, await service.exec_once(_body(req, EXEC_FIELDS, "an exec")))

    async def judge(req: Request, _p: dict[str, str]) -> Response:
        return Response(200, await judge_body(service.languages, req.json()))

    async def drain(req: Request, _p: dict[str, str]) -> Response:
        if not req.is_local:
            raise WireError(
                403, "forbidden", "admin routes answer only to loopback and unix-socket clients"
            )
        on_drain()
        return Response(202, {"status": "draining", "inflight": service.admission.inflight})

    async def stats(_req: Request, _p: dict[str, str]) -> Response:
        return Response(200, service.stats())

    router.add("GET", "/v1/health", health)
    router.add("GET", "/v1/stats", stats)
    router.add("POST", "/v1/judge", judge)
    router.add("GET", "/v1/sessions", list_sessions)
    router.add("POST", "/v1/sessions", create_session)
    router.add("GET", "/v1/sessions/{id}", get_session)
    router.add("POST", "/v1/sessions/{id}/exec", exec_session)
    router.add("DELETE", "/v1/sessions/{id}", delete_session)
    router.add("POST", "/v1/exec", exec_once)
    router.add("POST", "/v1/admin/drain", drain)
    return router
