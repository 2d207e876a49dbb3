"""A session: one live sandbox on the gateway that you exec in, fork,
suspend and resume.

``client.session(template)`` returns a :class:`Session` that creates its
sandbox on entering the ``with`` block (or on first use) and deletes it on
leaving, also when the block raised. :meth:`Session.fork` is the raw wire
call; :meth:`Session.fork_group` is the managed GRPO group (see
:mod:`.fork_group`). ``suspend`` stops the sandbox's processes and pauses the
meter; ``resume`` continues them. :class:`AsyncSession` is the coroutine twin.
"""

from __future__ import annotations

from ..gateway import register_flows
from ._async.sessions import AsyncSession
from ._session_state import template_id_of
from ._sync.sessions import Session

__all__ = ["AsyncSession", "Session", "template_id_of"]

# Their public home: reprs, docs and pickles name this module. (AsyncSession
# is written in collimate_rl/gateway_flows/_async/sessions.py; Session is generated from
# it by tools/unasync.py.)
for _cls in (Session, AsyncSession):
    _cls.__module__ = __name__
del _cls

# ``client.session(...)`` builds these (the client is a layer below: see collimate_rl.gateway)
register_flows(Session=Session, AsyncSession=AsyncSession)
