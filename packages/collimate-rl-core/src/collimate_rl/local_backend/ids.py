"""The local backend's opaque ids: sessions (``sess_``), gateway sandboxes
(``sb_``) and exec answers that named no id (``req_``)."""

from __future__ import annotations

import secrets

__all__ = ["new_id"]


def new_id(prefix: str) -> str:
    """``<prefix>_`` and 16 random hex digits."""
    return f"{prefix}_{secrets.token_hex(8)}"
