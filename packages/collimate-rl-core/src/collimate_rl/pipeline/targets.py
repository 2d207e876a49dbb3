"""What the SDK knows of a target: how many execs it runs at once, how many
it admits, and whether its guests can run packs at all.

A target is a server (its endpoint) or, where programs differ, a template
on it. What a server says of itself in ``/v1/health`` (``run_slots``: the
one-shots it runs at once, one per CPU on the local backend;
``max_inflight``: the execs it admits before answering 503 ``at_capacity``)
is asked once and kept for :data:`FACTS_TTL_S`; a server that does not say
(the gateway, a test double without ``health``) gets ``None`` for both, and
every caller has a default for that. Asking never fails a grade: a server
that cannot answer ``health`` will answer the exec with the error that
counts.

A target whose guest said it can never run a pack (a note starting with
``cannot pack: ``: a root guest, a shared guest, no fd passing) is kept in
:data:`unpackable`, per target and never for the whole process;
``unpackable.clear()`` (or ``forget``) forgets it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "FACTS_TTL_S",
    "TargetFacts",
    "endpoint_of",
    "facts",
    "facts_async",
    "facts_from_health",
    "forget_facts",
    "unpackable",
]

_log = logging.getLogger("collimate_rl.grading")

#: How long what a server said of itself is trusted before it is asked again.
FACTS_TTL_S: Final = 30.0
#: How long a server that could not answer ``health`` is left unasked.
_UNKNOWN_TTL_S: Final = 5.0


def endpoint_of(client: Any) -> str:
    """The server a client talks to: its ``endpoint`` (URL or ``unix:<path>``),
    else the client object itself (a test double, a plugin's transport)."""
    endpoint = getattr(client, "endpoint", None)
    return endpoint if isinstance(endpoint, str) else f"client:{id(client)}"


@dataclass(frozen=True)
class TargetFacts:
    """What a server said of itself (``None``: it did not say)."""

    #: one-shot execs it runs at once (the local backend: one per CPU)
    slots: int | None = None
    #: execs it admits at once before answering 503 ``at_capacity``
    max_inflight: int | None = None


def _positive(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value


def facts_from_health(health: Mapping[str, Any]) -> TargetFacts:
    """Read ``/v1/health``: ``run_slots`` (0 means unpaced: unknown) and
    ``max_inflight`` (0 means unlimited)."""
    return TargetFacts(_positive(health.get("run_slots")), _positive(health.get("max_inflight")))


class _FactsCache:
    """Facts per endpoint, with their expiry; shared by threads and loops."""

    def __init__(self) -> None:
        self._facts: dict[str, tuple[float, TargetFacts]] = {}
        self._lock = threading.Lock()

    def fresh(self, endpoint: str) -> TargetFacts | None:
        with self._lock:
            entry = self._facts.get(endpoint)
        if entry is None or entry[0] < time.monotonic():
            return None
        return entry[1]

    def keep(self, endpoint: str, facts: TargetFacts, ttl: float) -> TargetFacts:
        with self._lock:
            if len(self._facts) > 1024:
                self._facts.clear()
            self._facts[endpoint] = (time.monotonic() + ttl, facts)
        return facts

    def forget(self, endpoint: str | None = None) -> None:
        with self._lock:
            if endpoint is None:
                self._facts.clear()
            else:
                self._facts.pop(endpoint, None)


_cache = _FactsCache()


def forget_facts(endpoint: str | None = None) -> None:
    """Ask ``endpoint`` (every server, by default) again at its next grade."""
    _cache.forget(endpoint)


def _learned(endpoint: str, health: Any) -> TargetFacts:
    if not isinstance(health, Mapping):
        return _cache.keep(endpoint, TargetFacts(), _UNKNOWN_TTL_S)
    return _cache.keep(endpoint, facts_from_health(health), FACTS_TTL_S)


def _not_learned(endpoint: str, exc: BaseException) -> TargetFacts:
    _log.debug("%s did not say what it runs at once (%s): defaults apply", endpoint, exc)
    return _cache.keep(endpoint, TargetFacts(), _UNKNOWN_TTL_S)


def facts(client: Any) -> TargetFacts:
    """What ``client``'s server says of itself (blocking client)."""
    endpoint = endpoint_of(client)
    known = _cache.fresh(endpoint)
    if known is not None:
        return known
    try:
        return _learned(endpoint, client.health())
    except Exception as exc:  # never a grade's failure: the exec says what failed
        return _not_learned(endpoint, exc)


async def facts_async(client: Any) -> TargetFacts:
    """:func:`facts` with an async client."""
    endpoint = endpoint_of(client)
    known = _cache.fresh(endpoint)
    if known is not None:
        return known
    try:
        return _learned(endpoint, await client.health())
    except Exception as exc:
        return _not_learned(endpoint, exc)


class _Unpackable:
    """Targets (endpoint, template) whose guest said it can never run a pack."""

    def __init__(self) -> None:
        self._targets: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def __contains__(self, target: object) -> bool:
        with self._lock:
            return target in self._targets

    def mark(self, target: tuple[str, str], why: str) -> None:
        with self._lock:
            if target in self._targets:
                return
            self._targets.add(target)
        _log.warning(
            "%s on %s cannot grade packs (%s): grading its candidates alone",
            target[1],
            target[0],
            why,
        )

    def forget(self, target: tuple[str, str]) -> None:
        with self._lock:
            self._targets.discard(target)

    def clear(self) -> None:
        with self._lock:
            self._targets.clear()


#: Targets that grade alone until forgotten (``unpackable.clear()``).
unpackable = _Unpackable()
