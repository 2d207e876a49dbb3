"""``MultiNodeClient``: one client over several nodes (daemons on many machines,
or several gateways), accepted wherever a client is.

Work that may go anywhere (a one-shot ``exec_once``, ``create_session``)
goes to the least loaded node that is in. A node that refuses it untouched
(draining, full, or not reachable before a byte was sent: see
:func:`collimate_rl.wire.nothing_happened`) is left out for a while and the
request goes to the next node; when every node refused, the pool waits
(exponential backoff with full jitter, bounded by ``retry_budget``) and
goes round again. A request that may have run (no answer after it was
sent) is never sent again anywhere: the error is raised, as a single
client would. A session lives on the node that created it, and its
requests go there.

``health()`` sums the nodes' ``run_slots`` and ``max_inflight``, so
grading sizes its packs and its concurrency for the whole pool.
"""

from __future__ import annotations

from ._sync import MultiNodeClient

__all__ = ["MultiNodeClient"]

# Its public home: reprs, docs and pickles name this module. (The pool is
# generated, by tools/unasync.py, from collimate_rl/nodes/_async.py.)
MultiNodeClient.__module__ = __name__
