"""One client over many nodes: :class:`NodePool` and :class:`AsyncNodePool`.

Where users outgrow one machine, the fleet is several daemons (or
gateways); these clients spread work over them by load, route around a
draining or dead node without ever running a request twice, and are
accepted wherever a client is (grading, ``Sandbox``, the framework
plugins, ``connect()`` given several URLs).
"""

from __future__ import annotations

from .async_pool import AsyncNodePool
from .pool import NodePool

__all__ = ["AsyncNodePool", "NodePool"]
