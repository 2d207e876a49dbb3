"""Services reached from outside: connect URLs and the tunnel behind them.

``POST /v1/sandboxes/{id}/connect-url`` mints a short-lived ``ws://`` URL
for one exposed guest port of one sandbox (pro and ent keys: host->guest
ingress is networking, which the demo tier has none of). ``GET /connect``
with that URL's ``port`` and ``t`` is a WebSocket upgrade on this same
HTTP server: its token is checked (a forged, expired or other-port token
answers 401 and the connection closes), the guest port is dialled, and the
switched connection then carries raw bytes both ways (:mod:`.tunnel_relay`)
or, for a ``cdp`` URL, the browser's DevTools messages (:mod:`.cdp_relay`).
No listener is opened for it: the tunnel is the server's own port.

Where the bytes go: an app template's clone serves its first declared guest
port on a loopback port of this host, published as the sandbox's
``endpoints`` (``{"8000": "127.0.0.1:41234"}``); the tunnel connects there.
A port the sandbox does not publish is 409 ``port_not_exposed`` at mint time.
This server has no TLS, so its URLs are ``ws://`` (the managed gateway's are
``wss://``); clients accept either.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from .._websocket import accept_key
from .cdp_relay import CdpUnavailable, open_browser_socket, relay_messages
from .connect_tokens import CONNECT_DEFAULT_TTL_S, CONNECT_MAX_TTL_S, ConnectGrant, ConnectTokens
from .routing import ByteStream, Request, Response
from .tenants import Tenant
from .tunnel_relay import relay
from .usage import rfc3339
from .wire_errors import WireError, bad_request

if TYPE_CHECKING:
    from .gateway_sandboxes import Sandbox, SandboxBook

#: the tunnel's path (the token in the query names the sandbox and port)
CONNECT_PATH = "/connect"
#: what the tunnel can carry: ``tcp``, raw bytes to the guest port; ``cdp``,
#: the browser's DevTools WebSocket relayed message for message
#: (:mod:`.cdp_relay`), what ``connect_over_cdp(url)`` needs
PROTOCOLS = ("tcp", "cdp")


def ingress_requires_pro(tenant: Tenant) -> WireError:
    return WireError(
        403,
        "network_requires_pro",
        "connect URLs (host->guest ingress) need a pro or ent key: networked "
        f"sandboxes are a pro feature (this key is {tenant.tier.name})",
    )


def _port_of(raw: Any) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or not 1 <= raw <= 65535:
        raise bad_request(f"port must be an integer in 1..65535, got {raw!r}")
    return raw


def _ttl_of(raw: Any) -> float:
    if raw is None:
        return float(CONNECT_DEFAULT_TTL_S)
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or raw <= 0:
        raise bad_request(f"ttl_seconds must be a positive number, got {raw!r}")
    return float(min(raw, CONNECT_MAX_TTL_S))


def _protocol_of(raw: Any) -> str:
    protocol = "tcp" if raw is None else raw
    if protocol not in PROTOCOLS:
        raise bad_request(
            f"protocol {raw!r} is not served by this backend (served: {', '.join(PROTOCOLS)})"
        )
    return str(protocol)


#: what carries a switched connection: the guest's streams, the client's
Pump = Callable[[asyncio.StreamReader, asyncio.StreamWriter, ByteStream], Awaitable[None]]


class ConnectRoutes:
    """The two routes of ingress over one gateway's sandboxes."""

    def __init__(self, boxes: SandboxBook, tokens: ConnectTokens) -> None:
        self.boxes = boxes
        self.tokens = tokens

    def mint(self, tenant: Tenant, sandbox_id: str, body: Mapping[str, Any], host: str) -> Any:
        """``{url, expires_at}`` for one exposed port of one of ``tenant``'s sandboxes."""
        if not tenant.tier.can_network:
            raise ingress_requires_pro(tenant)
        box = self.boxes.get(tenant, sandbox_id)
        port = _port_of(body.get("port"))
        ttl = _ttl_of(body.get("ttl_seconds"))
        protocol = _protocol_of(body.get("protocol"))
        exposed = self.boxes.endpoints(box)
        if str(port) not in exposed:
            shown = ", ".join(sorted(exposed, key=int)) or "none"
            raise WireError(
                409,
                "port_not_exposed",
                f"port {port} is not exposed by sandbox {sandbox_id} (exposed: {shown}); "
                "declare it in the template's ports",
            )
        expires = time.time() + ttl
        token = self.tokens.mint(ConnectGrant(box.id, tenant.id, port, protocol, expires))
        mode = "" if protocol == "tcp" else f"&protocol={protocol}"
        return {
            "url": f"ws://{host}{CONNECT_PATH}?port={port}&t={token}{mode}",
            "expires_at": rfc3339(expires),
        }

    async def tunnel(self, req: Request) -> Response:
        """Check the token, dial the guest port, answer 101 with the relay."""
        query = parse_qs(req.query)
        try:
            port = int(query.get("port", [""])[-1])
        except ValueError:
            raise bad_request("port must be a number") from None
        grant = self.tokens.check(query.get("t", [""])[-1], port)
        box = self.boxes.get_owned(grant.tenant, grant.sandbox)
        key = req.headers.get("sec-websocket-key", "")
        if req.headers.get("upgrade", "").lower() != "websocket" or not key:
            raise bad_request("the tunnel is a WebSocket: send an Upgrade: websocket request")
        target = self.boxes.endpoints(box).get(str(port))
        if target is None:
            raise WireError(409, "port_not_exposed", f"port {port} is no longer served")
        host, _, target_port = target.rpartition(":")
        pump: Pump
        try:
            if grant.protocol == "cdp":
                reader, writer = await open_browser_socket(host, int(target_port))
                pump = relay_messages
            else:
                reader, writer = await asyncio.open_connection(host, int(target_port))
                pump = relay
        except (OSError, CdpUnavailable) as exc:
            raise WireError(
                502, "upstream_error", f"guest port {port} refused the tunnel: {exc}"
            ) from None
        headers = [
            ("upgrade", "websocket"),
            ("connection", "Upgrade"),
            ("sec-websocket-accept", accept_key(key)),
        ]
        return Response(
            101, None, headers, upgrade=functools.partial(self._carry, box, pump, reader, writer)
        )

    async def _carry(
        self,
        box: Sandbox,
        pump: Pump,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        client: ByteStream,
    ) -> None:
        """Relay, the sandbox counted busy meanwhile: a sandbox someone is
        connected to is in use, and is not reaped as idle under the tunnel."""
        session = self.boxes.session_of(box)
        if session is not None:
            session.busy += 1
        try:
            await pump(reader, writer, client)
        finally:
            if session is not None:
                session.busy = max(0, session.busy - 1)
                session.last_active = time.monotonic()
