"""Tenants and their API keys: who is calling the gateway wire.

A key ``col_<tier>_<rest>`` names its tier by its prefix; the tenant it
belongs to is either named next to it in a keys file (several keys, one
tenant) or derived from a hash of the key. Keys are held only as SHA-256
digests once loaded: nothing here can log, print or return a key, and a
tenant's id is never the key. The one place a key is shown is the start-up
banner of a server that generated its own (see :func:`generate_keys`).

Keys file: one key per line, optionally followed by a tenant name; blank
lines and ``#`` comments are skipped::

    col_pro_team_a_1  team-a
    col_ent_team_a_2  team-a      # same tenant, another tier
    col_demo_someone_else
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .tiers import Tier, tier_of_key
from .wire_errors import WireError

_TENANT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class Tenant:
    """The caller of one request: a tenant id and the tier of the key it used."""

    id: str
    tier: Tier


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def shown(key: str) -> str:
    """A key as it may appear in an error message: its tier prefix only."""
    head = key.split("_", 2)
    return "_".join(head[:2]) + "_..." if len(head) >= 2 else "a key"


def generate_keys() -> dict[str, str]:
    """A fresh demo and pro key ``{tier: key}``, in the published format
    ``col_<tier>_<id8>_<secret32>``."""
    return {
        tier: f"col_{tier}_{secrets.token_hex(4)}_{secrets.token_hex(16)}"
        for tier in ("demo", "pro")
    }


class KeyRing:
    """Key digest -> :class:`Tenant`."""

    def __init__(self) -> None:
        self._tenants: dict[str, Tenant] = {}

    def __len__(self) -> int:
        return len(self._tenants)

    def add(self, key: str, tenant: str | None = None, *, where: str = "--api-key") -> Tenant:
        """Register ``key`` (for ``tenant``, else a tenant of its own).
        ``ValueError`` names ``where`` and what was expected, never the key."""
        key = key.strip()
        tier = tier_of_key(key)
        if tier is None or any(c.isspace() for c in key):
            raise ValueError(
                f"{where}: not an API key ({shown(key)}): keys look like col_<tier>_<secret> "
                "with tier demo, pro or ent"
            )
        if tenant is not None and not _TENANT_RE.match(tenant):
            raise ValueError(
                f"{where}: tenant name {tenant!r} must be letters, digits, '.', '_' or '-'"
            )
        digest = _digest(key)
        found = Tenant(tenant or "t_" + digest[:12], tier)
        self._tenants[digest] = found
        return found

    def add_file(self, path: str | Path) -> None:
        """Load a keys file (see the module docstring)."""
        text = Path(path).read_text(encoding="utf-8")
        for number, line in enumerate(text.splitlines(), 1):
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            if len(fields) > 2:
                raise ValueError(
                    f"{path}:{number}: expected 'KEY [TENANT]', got {len(fields)} fields"
                )
            self.add(fields[0], fields[1] if len(fields) == 2 else None, where=f"{path}:{number}")

    def add_all(self, keys: Iterable[str]) -> None:
        for key in keys:
            self.add(key)

    def tenant_for(self, authorization: str | None) -> Tenant:
        """The tenant of an ``Authorization: Bearer <key>`` header, or 401."""
        if not authorization:
            raise WireError(
                401, "unauthorized", "missing API key: send Authorization: Bearer col_..."
            )
        scheme, _, key = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            raise WireError(401, "unauthorized", "the Authorization header must be 'Bearer <key>'")
        tenant = self._tenants.get(_digest(key.strip()))
        if tenant is None:
            raise WireError(401, "unauthorized", "unknown API key")
        return tenant
