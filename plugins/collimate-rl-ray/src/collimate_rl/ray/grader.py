"""The grader actor: one a node, pinned there, owning its grader process.

Detached and named (``collimate-grader-<node id>`` in the fixed namespace),
so it outlives the job that started it and any job can find it. It starts
``collimate serve`` as its child (see :mod:`.watchdog`: the child stops
when the actor's process ends, however it ends) and writes the grader's
record (URL, pid) into the cluster's KV store. When the child dies on its
own, the actor ends its own process: Ray's actor restart (``max_restarts``)
then starts a fresh actor on the same node, with a fresh grader.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import ray

from . import kv
from .child import GraderProcess, start_grader

__all__ = ["Grader"]


class Grader:
    """The body of the grader actor (made remote by :mod:`.control`)."""

    def __init__(self, node_id: str, host: str | None, serve_args: tuple[str, ...]) -> None:
        self.node_id = node_id
        self._stopping = False
        secret = kv.secret(create=False)
        if secret is None:
            raise RuntimeError(
                "the cluster has no secret: start the graders with `collimate ray up`"
            )
        context = ray.get_runtime_context()
        self.host = host or ray.util.get_node_ip_address()
        self.process: GraderProcess = start_grader(secret, host=self.host, extra_args=serve_args)
        self.record: dict[str, Any] = {
            "node_id": node_id,
            "url": self.process.url,
            "pid": self.process.pid,
            "actor_pid": os.getpid(),
            "started": time.time(),
            "restarted": bool(context.was_current_actor_reconstructed),
        }
        kv.put_grader(node_id, self.record)
        threading.Thread(target=self._watch, name="collimate-grader-watch", daemon=True).start()

    def _watch(self) -> None:
        self.process.proc.wait()
        if not self._stopping:
            # the grader crashed: end this actor so that Ray restarts it
            # (and with it a new grader) on this node
            os._exit(1)

    def info(self) -> dict[str, Any]:
        """The record, with whether the process is alive and its last lines."""
        return {
            **self.record,
            "alive": self.process.proc.poll() is None,
            "log_tail": list(self.process.tail)[-5:],
        }

    def stop(self) -> None:
        """Stop the grader (drain) and withdraw the record; the caller kills the actor."""
        self._stopping = True
        self.process.stop()
        kv.drop_grader(self.node_id)
