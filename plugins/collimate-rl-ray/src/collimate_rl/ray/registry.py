"""The registry actor: its presence says the cluster runs graders, and its
loop keeps one grader on every live node.

Every ``interval`` seconds (and on :meth:`Registry.reconcile`), the live
nodes of ``ray.nodes()`` are compared with the graders: a node without one
gets one (a node that joined), the record and the actor of a node that is
gone are removed (its grader left the pool with it).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from . import kv
from .grader import Grader
from .names import NAMESPACE, grader_name

__all__ = ["Registry", "alive_nodes", "grader_actor"]

#: How long a new grader may take to listen (a cold node compiles, ...).
START_TIMEOUT_S = 180.0


def alive_nodes() -> list[str]:
    """The ids of the cluster's live nodes."""
    return [n["NodeID"] for n in ray.nodes() if n.get("Alive")]


def grader_actor(node_id: str) -> Any | None:
    """The grader actor of ``node_id``, or None."""
    try:
        return ray.get_actor(grader_name(node_id), namespace=NAMESPACE)
    except ValueError:
        return None


def _start(node_id: str, settings: dict[str, Any]) -> Any:
    remote = ray.remote(Grader).options(
        name=grader_name(node_id),
        namespace=NAMESPACE,
        lifetime="detached",
        get_if_exists=True,
        # a crashed grader ends its actor; Ray starts it again, on this node
        max_restarts=-1,
        max_task_retries=0,
        num_cpus=0,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
    )
    return remote.remote(node_id, settings.get("host"), tuple(settings.get("serve_args", ())))


class Registry:
    """The body of the registry actor (made remote by :mod:`.control`)."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.settings = dict(settings)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.rounds = 0
        self.last_error: str | None = None
        threading.Thread(target=self._loop, name="collimate-reconcile", daemon=True).start()

    def _loop(self) -> None:
        interval = float(self.settings.get("interval", 2.0))
        while not self._stop.wait(interval):
            try:
                self.reconcile()
            except Exception as exc:  # the loop outlives a bad round; status shows it
                self.last_error = f"{type(exc).__name__}: {exc}"

    def reconcile(self) -> dict[str, list[str]]:
        """One round: graders for the nodes without one, none for the gone;
        returns the node ids ``started`` and ``removed`` (waits for the
        started ones to listen)."""
        with self._lock:
            if self._stop.is_set():
                return {"started": [], "removed": []}
            live = set(alive_nodes())
            started: list[tuple[str, Any]] = []
            for node_id in sorted(live):
                if grader_actor(node_id) is None:
                    started.append((node_id, _start(node_id, self.settings)))
            removed: list[str] = []
            for node_id in kv.grader_records():
                if node_id not in live:
                    actor = grader_actor(node_id)
                    if actor is not None:
                        with contextlib.suppress(Exception):
                            ray.kill(actor, no_restart=True)
                    kv.drop_grader(node_id)
                    removed.append(node_id)
            for _, actor in started:
                ray.get(actor.info.remote(), timeout=START_TIMEOUT_S)
            self.rounds += 1
            return {"started": [n for n, _ in started], "removed": removed}

    def info(self) -> dict[str, Any]:
        return {"settings": self.settings, "rounds": self.rounds, "last_error": self.last_error}

    def stop(self) -> None:
        """End the loop (``down`` then stops the graders)."""
        self._stop.set()
        with self._lock:
            pass
