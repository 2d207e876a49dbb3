"""The managed gateway's flows on top of its client (docs/wire.md §3-4).

* :mod:`.envs`: ``client.env(ref, width=N)`` declares a session's width and
  releases it after;
* :mod:`.sessions`: ``client.session(template)``, one live sandbox to exec
  in, fork, suspend and resume;
* :mod:`.fork_group`: ``Session.fork_group(n)``, a strict-width GRPO group;
* :mod:`.templates` and :mod:`.status`: ``Template.bake`` and waiting on it;
* :mod:`.cli`: ``collimate bake``, ``collimate images``, ``collimate status``.

Each has an async twin for :class:`~collimate_rl.AsyncGatewayClient`.
"""

from .envs import AsyncEnv, Env
from .fork_group import AsyncForkGroup, ForkGroup
from .sessions import AsyncSession, Session
from .status import TIER_FORK_CAP, Ready, TemplateStatus, fork_cap
from .templates import AsyncTemplate, AsyncTemplateHandle, Template, TemplateHandle

__all__ = [
    "TIER_FORK_CAP",
    "AsyncEnv",
    "AsyncForkGroup",
    "AsyncSession",
    "AsyncTemplate",
    "AsyncTemplateHandle",
    "Env",
    "ForkGroup",
    "Ready",
    "Session",
    "Template",
    "TemplateHandle",
    "TemplateStatus",
    "fork_cap",
]
