"""Building the plugin manager: specs, entry points, built-ins, validation.

One function, :func:`new_plugin_manager`, does the whole assembly so that the
order is fixed and testable:

1. add the hook specifications (:mod:`.hookspecs`);
2. block what ``COLLIMATE_RL_BLOCK_PLUGINS`` names (entry-point names such as
   ``skyrl``, distribution names such as ``collimate-rl-skyrl``, or built-in
   plugin names);
3. load the ``collimate_rl`` entry-point group, unless
   ``COLLIMATE_RL_DISABLE_PLUGIN_AUTOLOAD`` is set (or the caller said no);
4. register the built-in plugins (core's own features use the same hooks);
5. ``check_pending()``: a hook implementation whose name matches no spec is a
   typo, and a typo in a hook name would otherwise be silently ignored.

:func:`get_plugin_manager` caches one manager per process (per
``load_entrypoints`` value): clients, rewards and the CLI share it, and a
Ray or multiprocessing worker builds its own on first use.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
import threading
from collections.abc import Iterable

import pluggy

from . import hookspecs
from .builtin import register_builtin_plugins
from .errors import PluginLoadError
from .markers import PROJECT_NAME

__all__ = [
    "ENTRY_POINT_GROUP",
    "ENV_BLOCK",
    "ENV_DISABLE_AUTOLOAD",
    "ENV_TRACE",
    "blocked_plugin_names",
    "get_plugin_manager",
    "new_plugin_manager",
    "reset_plugin_manager",
]

#: The entry-point group third-party plugins declare
#: (``[project.entry-points.collimate_rl] myplugin = "my_pkg.plugin"``).
ENTRY_POINT_GROUP = "collimate_rl"
#: Set to ``1`` / ``true`` / ``yes`` to load no entry-point plugin at all.
ENV_DISABLE_AUTOLOAD = "COLLIMATE_RL_DISABLE_PLUGIN_AUTOLOAD"
#: Comma-separated plugin names (entry-point or distribution names) to skip.
ENV_BLOCK = "COLLIMATE_RL_BLOCK_PLUGINS"
#: Set to ``1`` / ``true`` / ``yes`` to trace every hook call to stderr.
ENV_TRACE = "COLLIMATE_RL_TRACE_HOOKS"

_TRUTHY = frozenset({"1", "true", "yes", "on"})

_cache: dict[bool, pluggy.PluginManager] = {}
_cache_lock = threading.Lock()


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in _TRUTHY


def blocked_plugin_names(value: str | None = None) -> frozenset[str]:
    """The names listed in ``COLLIMATE_RL_BLOCK_PLUGINS`` (or in ``value``)."""
    raw = os.environ.get(ENV_BLOCK, "") if value is None else value
    return frozenset(part.strip() for part in raw.split(",") if part.strip())


def _group_entry_points() -> list[importlib.metadata.EntryPoint]:
    return list(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))


def _dist_name(ep: importlib.metadata.EntryPoint) -> str | None:
    dist = getattr(ep, "dist", None)
    return None if dist is None else str(dist.metadata["Name"])


def _normalise(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _apply_blocklist(pm: pluggy.PluginManager, blocked: Iterable[str]) -> None:
    """Block plugins by their plugin name, or by the distribution shipping them.

    pluggy blocks by plugin name (the entry-point name for installed
    plugins); users think in distribution names, so both are accepted.
    """
    names = set(blocked)
    if not names:
        return
    wanted_dists = {_normalise(n) for n in names}
    for ep in _group_entry_points():
        dist = _dist_name(ep)
        if dist is not None and _normalise(dist) in wanted_dists:
            names.add(ep.name)
    for name in names:
        pm.set_blocked(name)


def _load_entry_points(pm: pluggy.PluginManager) -> None:
    try:
        pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
    except Exception as exc:
        # pluggy stops at the first broken entry point without naming it:
        # the first one that is neither registered nor blocked is the culprit.
        culprit = next(
            (
                ep
                for ep in _group_entry_points()
                if pm.get_plugin(ep.name) is None and not pm.is_blocked(ep.name)
            ),
            None,
        )
        where = (
            f"entry point {culprit.name!r} = {culprit.value!r} "
            f"(distribution {_dist_name(culprit)!r})"
            if culprit is not None
            else f"an entry point of group {ENTRY_POINT_GROUP!r}"
        )
        raise PluginLoadError(
            f"could not load the collimate-rl plugin {where}: {type(exc).__name__}: {exc}; "
            f"set {ENV_BLOCK}={culprit.name if culprit else 'NAME'} to skip it, or "
            f"{ENV_DISABLE_AUTOLOAD}=1 to load no installed plugin"
        ) from exc


def _write_stderr(text: str) -> None:
    # Looked up at each write: stderr may be replaced after the manager is built.
    sys.stderr.write(text)


def _enable_tracing(pm: pluggy.PluginManager) -> None:
    pm.trace.root.setwriter(_write_stderr)
    pm.enable_tracing()


def new_plugin_manager(
    load_entrypoints: bool = True,
    *,
    builtins: bool = True,
    blocked: Iterable[str] | None = None,
    trace: bool | None = None,
) -> pluggy.PluginManager:
    """Build a fresh, fully assembled plugin manager (tests use this one).

    ``blocked`` defaults to ``COLLIMATE_RL_BLOCK_PLUGINS``; ``trace`` to
    ``COLLIMATE_RL_TRACE_HOOKS``. Entry points load only when
    ``load_entrypoints`` is true and ``COLLIMATE_RL_DISABLE_PLUGIN_AUTOLOAD``
    is not set.
    """
    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    if trace if trace is not None else _env_flag(ENV_TRACE):
        _enable_tracing(pm)
    _apply_blocklist(pm, blocked_plugin_names() if blocked is None else blocked)
    if load_entrypoints and not _env_flag(ENV_DISABLE_AUTOLOAD):
        _load_entry_points(pm)
    if builtins:
        register_builtin_plugins(pm)
    pm.check_pending()
    return pm


def get_plugin_manager(load_entrypoints: bool = True) -> pluggy.PluginManager:
    """The process-wide plugin manager, built on first use and then cached.

    The environment variables are read when it is built; call
    :func:`reset_plugin_manager` after changing them (or use
    :func:`new_plugin_manager` for a private one).
    """
    pm = _cache.get(load_entrypoints)
    if pm is None:
        with _cache_lock:  # one build, however many threads ask first
            if load_entrypoints not in _cache:
                _cache[load_entrypoints] = new_plugin_manager(load_entrypoints)
            pm = _cache[load_entrypoints]
    return pm


def reset_plugin_manager() -> None:
    """Forget the cached managers; the next :func:`get_plugin_manager` rebuilds."""
    with _cache_lock:
        _cache.clear()
