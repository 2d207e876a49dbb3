"""The short-lived tokens of connect URLs: minted for one sandbox and one
guest port, checked when the tunnel is opened.

A token is ``<claims>.<signature>``: the claims (sandbox, tenant, port,
protocol, expiry) in base64url JSON, signed with HMAC-SHA256 under a secret
this server draws at start and never shows. Nothing is stored per token, so
minting stays idempotent and free; a token cannot be widened to another
sandbox or port (the signature covers them), and every token dies with the
server that signed it (its secret goes with it).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from .wire_errors import WireError

#: the longest a connect URL lives (as the managed gateway's contract: 1 h)
CONNECT_MAX_TTL_S = 3600
#: what a mint that names no ``ttl_seconds`` gets
CONNECT_DEFAULT_TTL_S = 600


@dataclass(frozen=True)
class ConnectGrant:
    """What one valid token allows: a tunnel to ``port`` of ``sandbox``."""

    sandbox: str
    tenant: str
    port: int
    protocol: str
    expires_at: float


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class ConnectTokens:
    """Mints and checks connect tokens under one secret."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._secret = secrets.token_bytes(32)
        self._clock = clock

    def _sign(self, claims: str) -> str:
        return _b64(hmac.new(self._secret, claims.encode("ascii"), hashlib.sha256).digest())

    def mint(self, grant: ConnectGrant) -> str:
        body = {
            "sb": grant.sandbox,
            "tn": grant.tenant,
            "p": grant.port,
            "pr": grant.protocol,
            "exp": round(grant.expires_at, 3),
            "n": secrets.token_hex(4),  # two mints in one instant differ
        }
        claims = _b64(json.dumps(body, separators=(",", ":")).encode())
        return f"{claims}.{self._sign(claims)}"

    def check(self, token: str, port: int) -> ConnectGrant:
        """The grant of ``token`` for ``port``; 401 ``unauthorized`` when it
        is forged, malformed, for another port, or expired (one answer for
        all: a prober learns nothing about which part was wrong)."""
        refused = WireError(401, "unauthorized", "connect token invalid or expired")
        claims, _, signature = token.partition(".")
        if not claims or not hmac.compare_digest(signature.encode(), self._sign(claims).encode()):
            raise refused
        try:
            body = json.loads(_unb64(claims))
            grant = ConnectGrant(
                str(body["sb"]),
                str(body["tn"]),
                int(body["p"]),
                str(body["pr"]),
                float(body["exp"]),
            )
        except (ValueError, KeyError, TypeError):
            raise refused from None
        if grant.port != port or self._clock() >= grant.expires_at:
            raise refused
        return grant
