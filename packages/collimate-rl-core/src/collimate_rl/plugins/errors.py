"""Errors of the plugin layer.

They subclass :class:`collimate_rl.errors.CollimateError` so a caller that
catches the SDK's error family also sees a broken plugin setup, but they are
configuration errors (no HTTP status): a plugin problem must never look like a
task failure or a server error.
"""

from __future__ import annotations

from ..errors import CollimateError


class PluginError(CollimateError):
    """Something is wrong with the installed or registered plugins."""

    def __init__(self, message: str) -> None:
        # No status and no error code: this never reached a server.
        super().__init__(message)


class PluginLoadError(PluginError):
    """A plugin entry point or a built-in plugin module could not be imported."""


class PluginConflictError(PluginError):
    """Two plugins claim the same name in a merged registry.

    ``registry`` is what was being merged (``"reward kind"``, ``"transport"``,
    ``"local template"``, ``"CLI command"``), ``name`` the contested name, and
    ``first`` / ``second`` the plugin names, in registration order.
    """

    def __init__(self, registry: str, name: str, first: str, second: str) -> None:
        self.registry = registry
        self.name = name
        self.first = first
        self.second = second
        super().__init__(
            f"{registry} {name!r} is provided by two plugins: {first!r} and {second!r}; "
            f"uninstall one of them or block it with COLLIMATE_RL_BLOCK_PLUGINS"
        )


class PluginContractError(PluginError):
    """A hook implementation returned something its hook spec does not allow."""
