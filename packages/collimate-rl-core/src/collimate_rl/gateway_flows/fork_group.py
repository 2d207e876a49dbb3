"""A GRPO group as live forks of one session, all or nothing.

``Session.fork_group(n)`` forks the session's sandbox into ``n`` copy-on-write
children. One ``fork`` call may ask for at most the tier's cap (demo 4, pro
32, ent 64), so the group is forked in chunks; fork a quiescent parent (its
shared prefix done), since the chunks copy it at slightly different moments.

The width is strict: a trainer that asked for a group of ``n`` must never
get ``n - 1`` (the group-relative advantage would silently change meaning).
If a chunk comes back short, or any call fails, every child forked so far is
deleted and the error raised. Each child carries its seed from
:func:`collimate_rl.seeds.group_seeds` (``seed_mode``), sent with every exec
in it, so ``"crn"`` gives the group common random numbers.

Leaving the ``with`` block deletes every child, also when the block raised;
the parent session stays (a trainer forks the next group from it). Closing
the session closes the groups forked from it, so a group that was never
closed does not outlive its parent.
"""

from __future__ import annotations

from ._async.fork_group import AsyncForkGroup
from ._group_state import DEFAULT_CONCURRENCY as DEFAULT_CONCURRENCY
from ._group_state import Labels as Labels
from ._group_state import OnInfraError as OnInfraError
from ._group_state import plan_group
from ._sync.fork_group import ForkGroup

__all__ = ["AsyncForkGroup", "ForkGroup", "plan_group"]

# Their public home: reprs, docs and pickles name this module. (AsyncForkGroup
# is written in collimate_rl/gateway_flows/_async/fork_group.py; ForkGroup is generated
# from it by tools/unasync.py.)
for _cls in (ForkGroup, AsyncForkGroup):
    _cls.__module__ = __name__
del _cls
