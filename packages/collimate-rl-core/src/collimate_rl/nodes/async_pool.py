"""``AsyncNodePool``: :class:`~collimate_rl.nodes.NodePool` with coroutines,
over async clients (same routing, same rules: see :mod:`.pool`)."""

from __future__ import annotations

from .._async.node_pool import AsyncNodePool

__all__ = ["AsyncNodePool"]

# Its public home: reprs, docs and pickles name this module. (The pool is
# written in collimate_rl/_async/node_pool.py; NodePool is generated from it.)
AsyncNodePool.__module__ = __name__
