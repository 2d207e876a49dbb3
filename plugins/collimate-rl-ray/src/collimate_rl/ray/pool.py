"""The pools ``connect()`` returns inside a Ray job: the many-node clients
of core, which also take in the graders of nodes that joined after they
were made.

A client is made once and kept (the adapters keep one a process), while a
cluster's nodes come and go. Before a one-shot or a new session, at most
every :data:`REFRESH_S` seconds, the pool reads the graders' records again
and adds the graders it does not know yet. A grader that went is not
removed (indices stay, sessions keep their owners): the pool's own rules
route around it from its first refused connection.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from collimate_rl.nodes import AsyncMultiNodeClient, MultiNodeClient

from .records import grader_urls

__all__ = ["REFRESH_S", "AsyncRayGraderPool", "RayGraderPool"]

#: How often a pool looks for graders of nodes that joined, at most.
REFRESH_S: Final = 5.0


def _current_urls() -> list[str]:
    nodes, _, _ = grader_urls()
    return [url for _, url in nodes]


class _Refreshing:
    """What both flavours add: a refresh, at most every ``refresh_s``."""

    _refresh_s: float
    _refresh_at: float
    _refresh_lock: threading.Lock

    if TYPE_CHECKING:  # the pool's own, later in the bases

        def add_nodes(self, nodes: Sequence[Any]) -> list[str]: ...

    def _start_refreshing(self, refresh_s: float) -> None:
        self._refresh_s = refresh_s
        self._refresh_at = time.monotonic() + refresh_s
        self._refresh_lock = threading.Lock()

    def refresh(self) -> list[str]:
        """Add the graders of the cluster's live nodes this pool does not
        have yet; returns their URLs."""
        with self._refresh_lock:
            self._refresh_at = time.monotonic() + self._refresh_s
            return self.add_nodes(_current_urls())

    def _maybe_refresh(self) -> None:
        if time.monotonic() < self._refresh_at:
            return
        # the records are a cache's news: a failed read waits for the next turn
        with contextlib.suppress(Exception):
            self.refresh()


class RayGraderPool(_Refreshing, MultiNodeClient):
    """:class:`~collimate_rl.nodes.MultiNodeClient` over the cluster's
    graders, taking in the graders of nodes that join."""

    def __init__(self, nodes: Sequence[Any], *, refresh_s: float = REFRESH_S, **kwargs: Any):
        super().__init__(nodes, **kwargs)
        self._start_refreshing(refresh_s)

    def exec_once(self, template_id: str, **kwargs: Any) -> dict[str, Any]:
        self._maybe_refresh()
        return super().exec_once(template_id, **kwargs)

    def create_session(
        self, template_id: str, *, egress: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        self._maybe_refresh()
        return super().create_session(template_id, egress=egress)

    def __getstate__(self) -> dict[str, Any]:
        return {**super().__getstate__(), "refresh_s": self._refresh_s}

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._start_refreshing(state.get("refresh_s", REFRESH_S))


class AsyncRayGraderPool(_Refreshing, AsyncMultiNodeClient):
    """The coroutine twin of :class:`RayGraderPool`."""

    def __init__(self, nodes: Sequence[Any], *, refresh_s: float = REFRESH_S, **kwargs: Any):
        super().__init__(nodes, **kwargs)
        self._start_refreshing(refresh_s)

    async def exec_once(self, template_id: str, **kwargs: Any) -> dict[str, Any]:
        self._maybe_refresh()
        return await super().exec_once(template_id, **kwargs)

    async def create_session(
        self, template_id: str, *, egress: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        self._maybe_refresh()
        return await super().create_session(template_id, egress=egress)

    def __getstate__(self) -> dict[str, Any]:
        return {**super().__getstate__(), "refresh_s": self._refresh_s}

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._start_refreshing(state.get("refresh_s", REFRESH_S))
