"""Sandbox: one live clone (session) of a template, the in-worker hot path.

``Sandbox`` forks a clone on :meth:`~Sandbox.start` (or on entering its
``with`` block), runs any number of execs in it, and reaps it on
:meth:`~Sandbox.close`. It works over either wire (any client with the
session surface) and moves arbitrary bytes with :meth:`~Sandbox.upload_bytes`
and :meth:`~Sandbox.download` (see :mod:`collimate_rl.fileio`).
:class:`AsyncSandbox` is the same object for an async client.

Crash recovery: :meth:`Sandbox.attach` adopts a session that is already live
(validated with ``GET /v1/sessions/{id}``, nothing forked) so a replacement
worker or a janitor can resume or reap an orphaned clone; :meth:`Sandbox.adopt`
does the same without the round trip (the caller vouches for the id).
"""

from __future__ import annotations

from ._async import AsyncSandbox, rollout_once_async
from ._state import WARM_FORK_MS as WARM_FORK_MS
from ._state import ExecResult
from ._sync import Sandbox, rollout_once

__all__ = ["AsyncSandbox", "ExecResult", "Sandbox", "rollout_once", "rollout_once_async"]

# Their public home: reprs, docs and pickles name this module. (AsyncSandbox
# and rollout_once_async are written in collimate_rl/sandbox/_async.py;
# Sandbox and rollout_once are generated from it by tools/unasync.py.)
for _public in (AsyncSandbox, ExecResult, Sandbox, rollout_once, rollout_once_async):
    _public.__module__ = __name__
del _public
