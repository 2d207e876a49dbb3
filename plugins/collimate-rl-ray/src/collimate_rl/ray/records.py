"""The live graders, as their records say: what the discovery (a pool made
once) and the pools (taking in the graders of nodes that join) both read.

Below both of them, so that neither imports the other to get it: the
discovery builds the pools (:mod:`.discovery`), the pools read the records
again (:mod:`.pool`). Importing this module costs nothing: Ray and the
records' readers are imported when :func:`grader_urls` is called, inside a
Ray job.
"""

from __future__ import annotations

__all__ = ["grader_urls"]


def grader_urls() -> tuple[list[tuple[str, str]], str | None, str]:
    """``([(node id, url)], secret, this node's id)`` of the live nodes'
    graders (the records of nodes gone are left out)."""
    import ray

    from . import kv
    from .registry import alive_nodes

    live = set(alive_nodes())
    records = kv.grader_records()
    found = sorted((n, r["url"]) for n, r in records.items() if n in live)
    return found, kv.secret(create=False), ray.get_runtime_context().get_node_id()
