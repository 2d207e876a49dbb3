"""A local-backend grader on every node of a Ray cluster, found by every
worker with no configuration.

``collimate ray up`` (or :func:`up`) starts the graders of a running
cluster: one ``collimate serve`` a node, owned by a detached actor pinned
to that node, reachable only with the cluster's secret (kept in Ray). Inside
any Ray task or actor of that cluster, ``collimate_rl.connect()`` (and so
every adapter) finds them, preferring the grader of its own node.

Importing this package does not import Ray; :func:`up`, :func:`status` and
:func:`down` do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .__about__ import __version__

if TYPE_CHECKING:
    from .control import GraderStatus

__all__ = ["GraderStatus", "__version__", "down", "status", "up"]


def up(**kwargs: Any) -> list[GraderStatus]:
    """See :func:`collimate_rl.ray.control.up`."""
    from .control import up as _up

    return _up(**kwargs)


def status(**kwargs: Any) -> list[GraderStatus]:
    """See :func:`collimate_rl.ray.control.status`."""
    from .control import status as _status

    return _status(**kwargs)


def down() -> int:
    """See :func:`collimate_rl.ray.control.down`."""
    from .control import down as _down

    return _down()


def __getattr__(name: str) -> Any:
    if name == "GraderStatus":
        from .control import GraderStatus

        return GraderStatus
    raise AttributeError(name)
