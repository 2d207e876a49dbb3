"""``up``, ``status`` and ``down``: the graders of a running cluster, from
Python (what ``collimate ray up | status | down`` calls).

Each works from any process connected to the cluster (a driver, a task, an
actor); :func:`connect_cluster` connects one that is not yet.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import ray
from collimate_rl.client import CollimateClient
from collimate_rl.errors import CollimateError
from collimate_rl.local_backend import SECRET_HEADER
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from . import kv
from .names import NAMESPACE, REGISTRY
from .registry import Registry, alive_nodes, grader_actor

__all__ = ["GraderStatus", "connect_cluster", "down", "registry", "status", "up"]


def connect_cluster(address: str | None = None) -> None:
    """Connect this process to a running cluster (``address``: Ray's, else
    ``RAY_ADDRESS``, else the cluster started on this machine), unless it
    already is."""
    if not ray.is_initialized():
        ray.init(address=address or "auto", log_to_driver=False)


def registry() -> Any | None:
    """The registry actor, or None when the cluster runs no graders."""
    try:
        return ray.get_actor(REGISTRY, namespace=NAMESPACE)
    except ValueError:
        return None


def up(
    *,
    host: str | None = None,
    serve_args: Sequence[str] = (),
    interval: float = 2.0,
) -> list[GraderStatus]:
    """Start the graders: the secret, the registry, one grader on every
    live node (returns once each listens); nodes that join later get theirs
    within ``interval`` seconds. Running it again changes nothing that runs
    (it starts what is missing). ``host``: the address graders listen on
    (default: their node's IP); ``serve_args``: more ``collimate serve``
    arguments (``--run-slots 2``, ...)."""
    kv.secret(create=True)
    settings = {"host": host, "serve_args": list(serve_args), "interval": interval}
    here = ray.get_runtime_context().get_node_id()
    actor = (
        ray.remote(Registry)
        .options(
            name=REGISTRY,
            namespace=NAMESPACE,
            lifetime="detached",
            get_if_exists=True,
            max_restarts=-1,
            num_cpus=0,
            # beside the caller (the head, usually), elsewhere if it goes
            scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=True),
        )
        .remote(settings)
    )
    ray.get(actor.reconcile.remote())
    return status()


@dataclass
class GraderStatus:
    """One node's grader as ``status`` sees it."""

    node_id: str
    url: str | None
    pid: int | None
    #: ``ok`` / ``draining`` (the grader's own), ``unreachable``, ``missing``
    health: str
    in_flight: int = 0
    run_slots: int = 0
    queued: int = 0
    #: one-shot execs the grader ran since it started (its own counter)
    execs_run: int = 0
    restarted: bool = False
    error: str | None = None

    @property
    def load(self) -> float:
        """Execs in flight per run slot."""
        return self.in_flight / max(1, self.run_slots)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "load": self.load}


def grader_client(url: str, *, timeout: float = 5.0) -> CollimateClient:
    """A client of one grader (with the cluster's secret)."""
    secret = kv.secret(create=False) or ""
    return CollimateClient(url, timeout=timeout, retries=0, headers={SECRET_HEADER: secret})


def status(*, timeout: float = 5.0) -> list[GraderStatus]:
    """Each live node's grader: where, its load and its health (asked of
    the grader itself)."""
    records = kv.grader_records()
    out: list[GraderStatus] = []
    for node_id in alive_nodes():
        record = records.get(node_id)
        if record is None:
            out.append(GraderStatus(node_id, None, None, "missing"))
            continue
        entry = GraderStatus(
            node_id, record["url"], record["pid"], "unreachable", restarted=record["restarted"]
        )
        with grader_client(record["url"], timeout=timeout) as client:
            try:
                health = client.health()
            except CollimateError as exc:
                entry.error = str(exc)
            else:
                entry.health = str(health.get("status"))
                entry.in_flight = int(health.get("inflight") or 0)
                entry.run_slots = int(health.get("run_slots") or 0)
                entry.queued = int(health.get("queued") or 0)
                entry.execs_run = int(health.get("execs_run") or 0)
        out.append(entry)
    return out


def down() -> int:
    """Stop every grader and the registry, forget the records and the
    secret; returns how many graders were stopped."""
    actor = registry()
    if actor is not None:
        with contextlib.suppress(Exception):
            ray.get(actor.stop.remote(), timeout=30)
    stopped = 0
    for node_id in set(kv.grader_records()) | set(alive_nodes()):
        grader = grader_actor(node_id)
        if grader is not None:
            with contextlib.suppress(Exception):
                ray.get(grader.stop.remote(), timeout=30)
                stopped += 1
            with contextlib.suppress(Exception):
                ray.kill(grader, no_restart=True)
        kv.drop_grader(node_id)
    if actor is not None:
        with contextlib.suppress(Exception):
            ray.kill(actor, no_restart=True)
    kv.drop_secret()
    return stopped
