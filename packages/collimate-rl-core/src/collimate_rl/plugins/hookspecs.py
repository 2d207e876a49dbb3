"""The hook specifications: each docstring is the contract of its hook.

All hooks are prefixed ``collimate_rl_``. Core registers its own features as
built-in plugins through these same hooks, so every hook is exercised by
core's tests, not only by third parties.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .events import ExecEvent, PluginAnnouncement, RewardFactory, Subcommands, TransportFactory
from .markers import hookspec


@hookspec
def collimate_rl_reward_kinds() -> Mapping[str, RewardFactory]:
    """Named reward kinds this plugin provides.

    Called when the reward registry is built. Each factory is called as
    ``factory(ground_truth, entry)`` and returns a ``RewardSpec``; the
    ``ground_truth`` dict names its kind under the key ``"kind"``.
    Results of all plugins are merged; two plugins claiming one name is an
    error that names both, never a silent override.
    """


@hookspec
def collimate_rl_transports() -> Mapping[str, TransportFactory]:
    """Named client factories that ``connect(transport=NAME, **kw)`` can resolve.

    Merged across plugins like reward kinds (a duplicate name is an error).
    A factory is called with the keyword arguments given to ``connect`` and
    returns a client with the session surface.
    """


@hookspec
def collimate_rl_announce() -> PluginAnnouncement:
    """Who this plugin is: name, version, and the framework it adapts with
    the version found (``None`` when that framework is not installed).

    Called by ``collimate plugins`` and diagnostics; returns one announcement
    per plugin (all results are collected). Must be cheap and never raise
    because a framework is missing.
    """


@hookspec
def collimate_rl_before_exec(event: ExecEvent) -> None:
    """Called just before a client sends an exec (every wire, sync or async).

    Observers only: the return value is ignored, and the event must not be
    mutated. An exception raised here propagates (a broken observer is a bug
    to surface, not to hide).
    """


@hookspec
def collimate_rl_after_exec(event: ExecEvent) -> None:
    """Called after an exec finished, with ``event.response`` set, or
    ``event.error`` when the call raised (the error is re-raised after the
    hooks run). Called exactly once per ``before_exec``."""


@hookspec
def collimate_rl_after_grade(result: Any, candidate: str, index: int) -> None:
    """Called once per graded candidate with its ``GradeResult`` (``index``
    is its position in the batch, 0 for a single ``grade``)."""


@hookspec
def collimate_rl_local_templates() -> Sequence[Mapping[str, Any]]:
    """Templates this plugin contributes to the local backend.

    Each item is a template table as in the backend's TOML file (``id``,
    ``kind``, ...). Results are concatenated; a template id defined twice is
    an error naming both sources. The config file wins over plugins only when
    the server is told so explicitly.
    """


@hookspec
def collimate_rl_cli_commands(subparsers: Subcommands) -> None:
    """Add subcommands to the ``collimate`` CLI.

    Each plugin calls ``subparsers.add_parser(...)`` and sets
    ``func=callable(args) -> int`` as the parser default.
    """


@hookspec(firstresult=True)
def collimate_rl_cluster_client(
    asynchronous: bool, required: bool, options: Mapping[str, Any]
) -> Any:
    """A client of the graders of the cluster this process runs in, or None.

    ``connect()`` asks this after the explicit arguments and the
    environment's targets, before the default address (docs/wire.md §5), so
    a worker of a cluster whose graders a plugin runs (the Ray plugin's)
    finds them with no configuration. ``COLLIMATE_SERVE_URL=ray://`` (a
    URL whose scheme names the cluster) asks it with ``required=True``: the
    plugin of that scheme must then answer or raise an error saying why
    (not in a cluster, no graders running). ``asynchronous``: a client
    whose methods are coroutines is wanted; ``options`` are ``connect()``'s
    keyword arguments (``timeout``, ``retries``, ...). The first non-None
    answer wins. Must be cheap and silent when this process is not in a
    cluster: it runs on every ``connect()`` without a target.
    """
