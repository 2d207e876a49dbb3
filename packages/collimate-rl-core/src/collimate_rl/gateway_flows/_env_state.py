"""What both environment flavours share: reading the catalog for a ref,
checking a width, and ``EnvState`` (what an environment holds).
``AsyncEnv`` is written in ``collimate_rl/gateway_flows/_async/envs.py``, ``Env``
generated from it; the public module is ``collimate_rl.gateway_flows.envs``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

__all__ = [
    "DEFAULT_READY_TIMEOUT",
    "NOT_OPEN",
    "EnvState",
    "catalog_row",
    "check_width",
    "is_catalog",
    "log",
]

log = logging.getLogger("collimate_rl.env")

#: An async environment's sandbox() before it was awaited or entered.
NOT_OPEN = "await the environment (or enter it) before opening sandboxes"

#: How long ``client.env`` waits for a catalog bake to go ``Live``.
DEFAULT_READY_TIMEOUT = 600.0


def check_width(width: int | None) -> None:
    if width is not None and (not isinstance(width, int) or isinstance(width, bool) or width < 1):
        raise ValueError(f"width must be an int >= 1 (or None), got {width!r}")


def catalog_row(rows: list[dict[str, Any]], ref: str) -> dict[str, Any] | None:
    for key in ("id", "name"):  # an id match outranks a name match
        for row in rows:
            if row.get(key) == ref:
                return row
    return None


def is_catalog(row: Mapping[str, Any] | None) -> bool:
    return row is not None and row.get("visibility", "public") == "public"


class EnvState:
    def __init__(self, ref: str, width: int | None, name: str | None) -> None:
        if not isinstance(ref, str) or not ref:
            raise ValueError(f"env needs a catalog ref or template id, got {ref!r}")
        check_width(width)
        self.ref = ref
        self.width = width
        self.name = name
        self.id: str = ref
        self.baked = False
        self._released = width is None  # nothing declared: nothing to release

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.ref!r}, id={self.id!r}, width={self.width})"
