"""One client over many nodes: :class:`MultiNodeClient` and
:class:`AsyncMultiNodeClient`.

Where users outgrow one machine, the fleet is several daemons (or
gateways); these clients spread work over them by load, route around a
draining or dead node without ever running a request twice, and are
accepted wherever a client is (grading, ``Sandbox``, the framework
plugins, ``connect()`` given several URLs).

They were called ``NodePool`` and ``AsyncNodePool`` until 0.9.0. The name
``collimate_rl.NodePool`` now means what it meant in the 0.8.0 release (a
node's row in :class:`~collimate_rl.FleetView`), so the many-node client
took a name of its own; the old names still import from here, with a
:class:`DeprecationWarning` naming the new one.
"""

from __future__ import annotations

import warnings
from typing import Any

from .async_client import AsyncMultiNodeClient
from .client import MultiNodeClient

__all__ = ["AsyncMultiNodeClient", "MultiNodeClient"]

#: old name -> the class it now goes by (kept importable, deprecated)
RENAMED: dict[str, type] = {
    "NodePool": MultiNodeClient,
    "AsyncNodePool": AsyncMultiNodeClient,
}


def renamed(old: str, where: str) -> Any:
    """The class ``old`` was renamed to, after warning the caller (who
    imported ``old`` from ``where``) of the new name."""
    new = RENAMED[old]
    warnings.warn(
        f"{where}.{old} is deprecated: it is now collimate_rl.nodes.{new.__name__} "
        f"(also collimate_rl.{new.__name__}); the old name will be removed",
        DeprecationWarning,
        stacklevel=3,
    )
    return new


def __getattr__(name: str) -> Any:
    if name in RENAMED:
        return renamed(name, __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
