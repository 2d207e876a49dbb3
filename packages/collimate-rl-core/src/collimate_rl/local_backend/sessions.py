"""Live sessions and the tombstones of reaped ones.

A session is one clone plus bookkeeping. Its execs are serialised (one guest,
one exec at a time, like a shell on a real VM); ``busy`` marks a session
that must not be reaped for idleness. A session that was reaped or destroyed
leaves a tombstone for a while, so its id answers 410 ``session_gone``
(permanent: do not retry) before it fades to 404 ``no_such_session``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from .egress import EgressDecision
from .engine.api import Clone, TemplateSpec
from .wire_errors import WireError


@dataclass
class Session:
    session_id: str
    template: TemplateSpec
    clone: Clone
    egress: EgressDecision | None
    created_at: float = field(default_factory=time.monotonic)
    last_active: float = field(default_factory=time.monotonic)
    exec_count: int = 0
    busy: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)

    def last_active_or_connected(self) -> float:
        """The last exec, or the last connection to its endpoints through
        the engine opening or closing, whichever came later (monotonic)."""
        return max(self.last_active, self.clone.connections_at)

    def info(self, now: float | None = None) -> dict[str, Any]:
        now = time.monotonic() if now is None else now
        return {
            "session_id": self.session_id,
            "template_id": self.template.id,
            "age_secs": round(now - self.created_at, 3),
            "idle_secs": 0.0
            if self.busy or self.clone.connections_in
            else round(now - self.last_active_or_connected(), 3),
            "exec_count": self.exec_count,
        }


class SessionStore:
    """Session id -> :class:`Session`, with tombstones for reaped ids."""

    def __init__(self, tombstone_ttl: float) -> None:
        self._live: dict[str, Session] = {}
        self._tombstones: dict[str, float] = {}  # id -> monotonic expiry
        self.tombstone_ttl = tombstone_ttl

    def __len__(self) -> int:
        return len(self._live)

    def add(self, session: Session) -> None:
        self._live[session.session_id] = session

    def all(self) -> list[Session]:
        return list(self._live.values())

    def get(self, session_id: str) -> Session:
        """The live session, or 410 ``session_gone`` / 404 ``no_such_session``."""
        session = self._live.get(session_id)
        if session is not None:
            return session
        if self.is_gone(session_id):
            raise WireError(410, "session_gone", f"session {session_id} was reaped or destroyed")
        raise WireError(404, "no_such_session", f"no such session: {session_id}")

    def pop(self, session_id: str, *, tombstone: bool) -> Session | None:
        session = self._live.pop(session_id, None)
        if session is not None and tombstone and self.tombstone_ttl > 0:
            self._tombstones[session_id] = time.monotonic() + self.tombstone_ttl
        return session

    def is_live(self, session_id: str) -> bool:
        return session_id in self._live

    def is_gone(self, session_id: str) -> bool:
        expiry = self._tombstones.get(session_id)
        if expiry is None:
            return False
        if expiry < time.monotonic():
            del self._tombstones[session_id]
            return False
        return True

    def idle_sessions(self, ttl: float) -> list[Session]:
        """Sessions idle ``ttl`` seconds: no exec, and no connection to its
        endpoints through the engine (a browser driven over CDP), open or
        closed, for that long."""
        now = time.monotonic()
        return [
            s
            for s in self._live.values()
            if not s.busy
            and not s.clone.connections_in
            and now - s.last_active_or_connected() >= ttl
        ]

    def expire_tombstones(self) -> None:
        now = time.monotonic()
        for sid in [sid for sid, exp in self._tombstones.items() if exp < now]:
            del self._tombstones[sid]
