"""The two send loops: thin, and identical but for ``await`` (the blocking
one, ``_sync.py`` here, is generated from the async one, ``_async.py``).

Each loop sends a :class:`~..calls.Call`, turns the answer into a value or a
typed error (:func:`~..calls.decode_answer`) and asks the request's
:class:`~collimate_rl.retry.RetryState` whether to go again. All the judgement
lives in :mod:`collimate_rl.retry`; these loops only do I/O and sleep.
"""

from __future__ import annotations

from ..send_base import nothing_was_sent
from ._async import AsyncHTTP
from ._sync import SyncHTTP

__all__ = ["AsyncHTTP", "SyncHTTP", "nothing_was_sent"]
