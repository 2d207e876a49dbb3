"""Requests, responses and route tables, with no sockets involved.

Each wire is one :class:`Router` (its routes plus its error envelope); the
server tries its routers in order. The daemon wire is one router today; the
gateway wire (tenants, tiers, Bearer keys) is another router over the same
:class:`~.service.BackendService`, added without touching the HTTP layer.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .cluster_secret import refusal, secret_matches
from .wire_errors import WireError, bad_request, not_found_route

log = logging.getLogger("collimate_rl.local_backend")

_PARAM_RE = re.compile(r"\{([a-z_]+)\}")


@dataclass
class Request:
    method: str
    path: str
    query: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    peer: str  # "unix" for a unix socket, else the client's IP address

    def json(self) -> Any:
        """The parsed body (``None`` when empty); 400 ``bad_request`` if not JSON."""
        if not self.body.strip():
            return None
        try:
            return json.loads(self.body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise bad_request(f"request body is not valid JSON: {exc}") from None
        except RecursionError:
            raise bad_request("request body is nested too deeply") from None

    @property
    def is_local(self) -> bool:
        """Loopback TCP or the unix socket (what admin routes require)."""
        return (
            self.peer == "unix" or self.peer in ("127.0.0.1", "::1") or self.peer.startswith("127.")
        )


class ByteStream(Protocol):
    """The raw connection a handler takes over after a protocol switch."""

    async def read(self) -> bytes:
        """The next bytes the client sent (``b""``: it closed its side)."""
        ...

    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...


#: What serves a connection once switched: it owns the stream until it returns.
Upgrade = Callable[[ByteStream], Awaitable[None]]


@dataclass
class Response:
    status: int
    body: Any
    headers: list[tuple[str, str]] = field(default_factory=list)
    #: set with status 101: the HTTP layer sends the 101 (with ``headers``)
    #: and hands the connection to it (a WebSocket upgrade)
    upgrade: Upgrade | None = None


Handler = Callable[[Request, dict[str, str]], Awaitable[Response]]


@dataclass(frozen=True)
class _Route:
    method: str
    regex: re.Pattern[str]
    handler: Handler


class Router:
    """One wire's routes and the envelope its errors are written in."""

    def __init__(
        self,
        name: str,
        error_body: Callable[[WireError], dict[str, Any]],
        *,
        claims: Callable[[Request], bool] | None = None,
    ) -> None:
        """``claims(request)`` lets a wire own a request outright (the gateway
        wire: any request with a ``Bearer`` key), routes and errors alike."""
        self.name = name
        self.error_body = error_body
        self.claims = claims
        self._routes: list[_Route] = []

    def add(self, method: str, pattern: str, handler: Handler) -> None:
        """``pattern`` like ``/v1/sessions/{id}/exec``; a ``{param}`` matches
        one path segment."""
        regex = "^" + _PARAM_RE.sub(r"(?P<\1>[^/]+)", pattern) + "$"
        self._routes.append(_Route(method.upper(), re.compile(regex), handler))

    def match(self, method: str, path: str) -> tuple[Handler, dict[str, str]] | None:
        for route in self._routes:
            m = route.regex.match(path)
            if m and route.method == method:
                return route.handler, m.groupdict()
        return None


class Dispatcher:
    """Find the route among the wires' routers; turn every refusal into the
    answer of that wire's envelope, and any bug into a 500 that says so."""

    def __init__(self, routers: Sequence[Router], *, secret: str | None = None) -> None:
        if not routers:
            raise ValueError("at least one router is needed")
        self.routers = list(routers)
        # the cluster's shared secret (see .cluster_secret): every request
        # must carry it, before any route is looked at
        self._secret = secret

    def candidates(self, request: Request) -> list[Router]:
        """The routers that may answer: those claiming the request, if any,
        else every router without a claim rule, in order."""
        claiming = [r for r in self.routers if r.claims is not None and r.claims(request)]
        return claiming or [r for r in self.routers if r.claims is None]

    async def __call__(self, request: Request) -> Response:
        routers = self.candidates(request) or self.routers
        router = routers[0]
        try:
            if self._secret is not None and not secret_matches(request.headers, self._secret):
                raise refusal()
            for candidate in routers:
                found = candidate.match(request.method, request.path)
                if found is not None:
                    router = candidate
                    handler, params = found
                    return await handler(request, params)
            raise not_found_route(request.method, request.path)
        except WireError as err:
            return Response(err.status, router.error_body(err))
        except Exception as exc:  # a bug: answer 500 (ambiguous, never retried) and say so
            log.exception("handler of %s %s failed", request.method, request.path)
            bug = WireError(500, "internal_error", f"internal error: {type(exc).__name__}: {exc}")
            return Response(500, router.error_body(bug))
