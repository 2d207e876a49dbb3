"""Finding the graders from inside the cluster: what ``connect()`` asks
(through the ``collimate_rl_cluster_client`` hook) when nothing else names
a target.

Cheap and silent outside Ray: a process in a Ray job (a driver after
``ray.init()``, any task or actor) has imported ``ray`` already, so a
process that has not is not in one and is answered at once, without
importing Ray (seconds). Inside a job, the registry actor's presence says
the cluster runs graders; their records give a pool of every live node's
grader, the caller's own node preferred while its grader has a free run
slot, the rest spilled by load with the many-node client's rules (see
:mod:`collimate_rl.nodes.client`), every request carrying the secret; the
pool takes in the graders of nodes that join later (:mod:`.pool`). The
records both read are :mod:`.records`' (``grader_urls`` is re-exported here).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Mapping
from typing import Any

from collimate_rl.local_backend import SECRET_HEADER
from collimate_rl.nodes import MultiNodeClient

from .records import grader_urls

__all__ = ["NotInCluster", "cluster_client", "grader_urls"]

_POOL_OPTIONS = frozenset(inspect.signature(MultiNodeClient.__init__).parameters) - {
    "self",
    "nodes",
    "prefer",
    "headers",
}


class NotInCluster(ValueError):
    """``ray://`` was named, but there are no graders to be found."""


def _ray_running() -> bool:
    ray = sys.modules.get("ray")
    return ray is not None and bool(getattr(ray, "is_initialized", lambda: False)())


def cluster_client(asynchronous: bool, required: bool, options: Mapping[str, Any]) -> Any | None:
    """A pool of the cluster's graders, or None (``required``: an error)."""

    def missing(why: str) -> None:
        if required:
            raise NotInCluster(f"COLLIMATE_SERVE_URL=ray://: {why}")

    if not _ray_running():
        if not required:
            return None
        try:
            from .control import connect_cluster
        except ImportError as exc:
            raise NotInCluster(f"COLLIMATE_SERVE_URL=ray://: Ray is not installed ({exc})") from exc

        try:
            connect_cluster()
        except Exception as exc:  # no cluster to join: say so, as ray:// was asked for
            raise NotInCluster(f"COLLIMATE_SERVE_URL=ray://: no Ray cluster ({exc})") from exc
    from .control import registry

    if registry() is None:
        missing("this Ray cluster runs no graders (start them with `collimate ray up`)")
        return None
    nodes, secret, here = grader_urls()
    if not nodes or secret is None:
        missing("the registry has no live graders yet")
        return None
    urls = [url for _, url in nodes]
    home = next((i for i, (node, _) in enumerate(nodes) if node == here), None)
    unknown = sorted(set(options) - _POOL_OPTIONS)
    if unknown:
        raise TypeError(f"the Ray graders' pool does not take {', '.join(unknown)}")
    from .pool import AsyncRayGraderPool, RayGraderPool

    cls = AsyncRayGraderPool if asynchronous else RayGraderPool
    return cls(urls, prefer=home, headers={SECRET_HEADER: secret}, **options)
