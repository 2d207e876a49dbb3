"""Clients of the node-local daemon wire (docs/wire.md §2): no auth, TCP or a unix socket.

:class:`CollimateClient` blocks; :class:`AsyncCollimateClient` is its
coroutine twin with the same methods. The async one is written once
(``collimate_rl/client/_async.py``) and the blocking one generated from it
(``collimate_rl/client/_sync.py``, by ``tools/unasync.py``); both describe
each route once (``collimate_rl/_transport/daemon.py``) and differ only in
how they send it, so the retry policy, the exec timeout sizing and the
observer hooks are the same.

A client pools keep-alive connections, is a context manager, and can be
pickled into a Ray / multiprocessing worker or used after ``os.fork``: the
connection pool is process-local and re-created lazily where it is used.
"""

from __future__ import annotations

from .._transport.daemon import DEFAULT_BASE_URL, SESSION_SOCKET
from ._async import AsyncCollimateClient
from ._sync import CollimateClient

__all__ = [
    "DEFAULT_BASE_URL",
    "SESSION_SOCKET",
    "AsyncCollimateClient",
    "CollimateClient",
]

# Their public home: reprs, docs and pickles name this module.
for _cls in (CollimateClient, AsyncCollimateClient):
    _cls.__module__ = __name__
del _cls
