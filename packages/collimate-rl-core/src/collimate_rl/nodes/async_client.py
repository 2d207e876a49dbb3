"""``AsyncMultiNodeClient``: :class:`~collimate_rl.nodes.MultiNodeClient`
with coroutines, over async clients (same routing, same rules: see
:mod:`.client`)."""

from __future__ import annotations

from ._async import AsyncMultiNodeClient

__all__ = ["AsyncMultiNodeClient"]

# Its public home: reprs, docs and pickles name this module. (The pool is
# written in collimate_rl/nodes/_async.py; MultiNodeClient is generated from it.)
AsyncMultiNodeClient.__module__ = __name__
