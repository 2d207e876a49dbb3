"""Helpers for tests on a real multi-node Ray cluster on one machine: the
cluster (``ray.cluster_utils.Cluster``, object store capped), waiting on a
condition, pinning to a node, the graders' own counters, and whether a
process is gone. Used by this plugin's tests and open to users' own.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = [
    "OBJECT_STORE_BYTES",
    "TARGET_ENV",
    "RayCluster",
    "grader_counters",
    "local_cluster",
    "pin",
    "process_gone",
    "wait_for",
]

#: per node: Ray's minimum is 75 MB; the tests move small objects only
OBJECT_STORE_BYTES = 100 * 1024 * 1024
#: reconcile rounds this often in the tests (a joining node waits at most this)
RECONCILE_S = 1.0
#: every URL-ish variable connect() reads: none may be set, the point is
#: that the graders are found without them
TARGET_ENV = (
    "COLLIMATE_SERVE_URL",
    "COLLIMATE_SERVE_SOCKET",
    "COLLIMATE_API_KEY",
    "COLLIMATE_BASE_URL",
)


@dataclass
class RayCluster:
    cluster: Any
    #: the three base nodes: head first
    node_ids: list[str]

    def add_node(self) -> Any:
        node = self.cluster.add_node(num_cpus=1, object_store_memory=OBJECT_STORE_BYTES)
        self.cluster.wait_for_nodes()
        return node


def wait_for(check: Callable[[], Any], timeout: float = 90.0, what: str = "") -> Any:
    """Poll ``check`` until it returns something true; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what or check}")
        time.sleep(0.2)


@contextlib.contextmanager
def local_cluster(nodes: int = 3, *, interval: float = RECONCILE_S) -> Iterator[RayCluster]:
    """``nodes`` Ray nodes on this machine (one CPU each), this process
    connected as a driver, the graders up (reconciling every ``interval``
    seconds); everything stopped on exit. None of ``TARGET_ENV`` is left
    set: the graders must be found without them."""
    import ray
    from collimate_rl.ray import down, up
    from ray.cluster_utils import Cluster

    for name in TARGET_ENV:
        os.environ.pop(name, None)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 1,
            "object_store_memory": OBJECT_STORE_BYTES,
            "include_dashboard": False,
        },
    )
    started = [cluster.head_node]
    for _ in range(nodes - 1):
        started.append(cluster.add_node(num_cpus=1, object_store_memory=OBJECT_STORE_BYTES))
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        up(interval=interval)
        yield RayCluster(cluster, [n.node_id for n in started])
    finally:
        try:
            down()
        finally:
            ray.shutdown()
            cluster.shutdown()


def pin(node_id: str) -> Any:
    """Run on ``node_id`` and nowhere else."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(node_id, soft=False)


def grader_counters() -> dict[str, int]:
    """Each live node's grader's own count of one-shot execs run."""
    from collimate_rl.ray import status

    return {s.node_id: s.execs_run for s in status()}


def process_gone(pid: int) -> bool:
    """No such process, or only its zombie left (it ran its exit)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            state = next((ln for ln in fh if ln.startswith("State:")), "")
    except FileNotFoundError:
        return True
    return "Z" in state.split(":", 1)[1][:3]
