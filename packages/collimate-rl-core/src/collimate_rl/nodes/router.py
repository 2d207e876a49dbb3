"""Which node gets the next request, and what a refusal says about a node.

Pure bookkeeping shared by :class:`~collimate_rl.nodes.MultiNodeClient` and its
async twin, so the two cannot drift: the load of each node (requests in
flight against the execs it runs at once), which nodes are out for a
while (draining, unreachable, full) and which node owns which session.

A node is *out* only for a while: a drain ends with the node gone or back
after an upgrade, a refused connection may be a restart. Once its time is
up it is tried again like any other; while every node is out, the one
back soonest is tried anyway (the pool never refuses work on stale news).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ..errors import CollimateDrainingError, CollimateError
from ..retry import RetryState

__all__ = ["NodeState", "Router", "merged_health", "retry_delay", "session_id_of"]

#: How long a draining node is left alone (a drain ends in a stop or a
#: restart; either way the node answers health again afterwards).
DRAINING_OUT_S: Final = 10.0
#: How long a full node (``at_capacity`` after its own retries) is left alone.
FULL_OUT_S: Final = 0.2
#: An unreachable node is left alone for this long, doubled per failure in
#: a row, up to :data:`UNREACHABLE_MAX_S`.
UNREACHABLE_OUT_S: Final = 0.5
UNREACHABLE_MAX_S: Final = 30.0


@dataclass
class NodeState:
    """One node as the pool sees it."""

    index: int
    endpoint: str
    #: execs it runs at once (its ``run_slots``; 1 until it says)
    slots: int = 1
    in_flight: int = 0
    #: skipped until this ``time.monotonic()``; why
    out_until: float = 0.0
    why_out: str | None = None
    failures: int = 0
    #: requests it answered, and requests it refused untouched (sent elsewhere)
    answered: int = 0
    refused: int = 0

    def load(self) -> float:
        return (self.in_flight + 1) / max(1, self.slots)

    def describe(self, now: float) -> dict[str, Any]:
        out = self.out_until > now
        return {
            "endpoint": self.endpoint,
            "state": (self.why_out or "out") if out else "in",
            "in_flight": self.in_flight,
            "slots": self.slots,
            "answered": self.answered,
            "refused": self.refused,
        }


@dataclass
class Router:
    """The nodes' states and the session owners, behind one lock."""

    nodes: list[NodeState]
    sessions: dict[str, int] = field(default_factory=dict)
    #: the caller's own node (a grader on the same machine), taken while it
    #: has a free run slot; the rest is spilled to the least loaded
    home: int | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _turn: int = 0

    @classmethod
    def of(cls, endpoints: Sequence[str], home: int | None = None) -> Router:
        if not endpoints:
            raise ValueError("a node pool needs at least one node")
        if home is not None and not 0 <= home < len(endpoints):
            raise ValueError(f"home node {home} is not one of the {len(endpoints)} nodes")
        return cls([NodeState(i, e) for i, e in enumerate(endpoints)], home=home)

    def pick(self, tried: set[int]) -> NodeState | None:
        """The home node while it is in, untried and has a free run slot;
        else the least loaded node that is in and not yet ``tried`` (ties go
        round the nodes in turn); if every untried node is out, the one back
        soonest; None once every node was tried. Counted in flight."""
        now = time.monotonic()
        with self._lock:
            left = [n for n in self.nodes if n.index not in tried]
            if not left:
                return None
            live = [n for n in left if n.out_until <= now]
            if self.home is not None:
                home = self.nodes[self.home]
                if home in live and home.in_flight < home.slots:
                    home.in_flight += 1
                    return home
            self._turn += 1
            size = len(self.nodes)
            if live:
                node = min(live, key=lambda n: (n.load(), (n.index - self._turn) % size))
            else:
                node = min(left, key=lambda n: n.out_until)
            node.in_flight += 1
            return node

    def add(self, endpoint: str) -> int:
        """A node that joined the pool; its index (indices never change:
        sessions keep their owners)."""
        with self._lock:
            index = len(self.nodes)
            self.nodes.append(NodeState(index, endpoint))
            return index

    def take(self, index: int) -> NodeState:
        """``index``'s node, counted in flight (a session's requests)."""
        with self._lock:
            node = self.nodes[index]
            node.in_flight += 1
            return node

    def done(self, node: NodeState, error: BaseException | None = None) -> None:
        """``node``'s request ended: answered (``error`` None or a task-level
        error), refused untouched, or unreachable."""
        now = time.monotonic()
        with self._lock:
            node.in_flight -= 1
            if error is None or not isinstance(error, CollimateError):
                node.answered += 1
                node.failures = 0
                if node.out_until and node.why_out != "draining":
                    node.out_until, node.why_out = 0.0, None
                return
            if isinstance(error, CollimateDrainingError) or error.error_code == "draining":
                node.refused += 1
                node.out_until, node.why_out = now + DRAINING_OUT_S, "draining"
            elif getattr(error, "unsent", False):
                node.refused += 1
                node.failures += 1
                wait = min(UNREACHABLE_MAX_S, UNREACHABLE_OUT_S * 2 ** (node.failures - 1))
                node.out_until, node.why_out = now + wait, "unreachable"
            elif error.error_code in ("at_capacity", "session_bringup_failed"):
                node.refused += 1
                node.out_until, node.why_out = now + FULL_OUT_S, "full"
            elif error.status is None:
                # no answer after the request left: it may have run, so it is
                # not sent elsewhere, but the node is suspect for a while
                node.answered += 1
                node.failures += 1
                wait = min(UNREACHABLE_MAX_S, UNREACHABLE_OUT_S * 2 ** (node.failures - 1))
                node.out_until, node.why_out = now + wait, "unreachable"
            else:
                node.answered += 1

    def learn(self, index: int, health: Mapping[str, Any] | None) -> None:
        """What a node's ``/v1/health`` said (None: it could not be asked)."""
        with self._lock:
            node = self.nodes[index]
            if health is None:
                return
            slots = health.get("run_slots")
            if isinstance(slots, int) and not isinstance(slots, bool) and slots > 0:
                node.slots = slots
            if health.get("status") == "draining":
                node.out_until = time.monotonic() + DRAINING_OUT_S
                node.why_out = "draining"
            elif node.why_out == "draining":
                node.out_until, node.why_out = 0.0, None

    def own(self, session_id: str, index: int) -> None:
        with self._lock:
            self.sessions[session_id] = index

    def owner(self, session_id: str) -> int | None:
        with self._lock:
            return self.sessions.get(session_id)

    def forget(self, session_id: str) -> None:
        with self._lock:
            self.sessions.pop(session_id, None)

    def snapshot(self) -> list[dict[str, Any]]:
        now = time.monotonic()
        with self._lock:
            return [n.describe(now) for n in self.nodes]


def merged_health(
    answers: Sequence[Mapping[str, Any] | BaseException], nodes: list[dict[str, Any]]
) -> dict[str, Any]:
    """One ``/v1/health`` body for the pool: ``ok`` while any node is; the
    execs run and admitted at once are the sum over the nodes that are ok
    (what grading sizes its packs and its concurrency by); each node's own
    answer under ``nodes``."""
    run_slots = 0
    max_inflight = 0
    unlimited = False
    ok = 0
    for answer in answers:
        if isinstance(answer, BaseException) or answer.get("status") != "ok":
            continue
        ok += 1
        slots = answer.get("run_slots")
        run_slots += slots if isinstance(slots, int) and slots > 0 else 1
        admit = answer.get("max_inflight")
        if isinstance(admit, int) and admit > 0:
            max_inflight += admit
        else:
            unlimited = True
    for entry, answer in zip(nodes, answers, strict=True):
        entry["health"] = (
            {"error": str(answer)} if isinstance(answer, BaseException) else dict(answer)
        )
    return {
        "status": "ok"
        if ok
        else (
            "draining"
            if any(
                not isinstance(a, BaseException) and a.get("status") == "draining" for a in answers
            )
            else "unavailable"
        ),
        "nodes_ok": ok,
        "run_slots": run_slots,
        "max_inflight": 0 if unlimited else max_inflight,
        "nodes": nodes,
    }


def retry_delay(state: RetryState, err: CollimateError) -> float | None:
    """How long to wait before sending again after ``err`` (None: give up),
    by the one retry policy (:mod:`collimate_rl.retry`)."""
    if err.status is None:
        return state.after_transport_error(nothing_sent=bool(getattr(err, "unsent", False)))
    return state.after_error(err)


def session_id_of(session: Mapping[str, Any]) -> str:
    """A session's id as either wire names it (``session_id``; ``id``)."""
    return str(session.get("session_id") or session.get("id"))
