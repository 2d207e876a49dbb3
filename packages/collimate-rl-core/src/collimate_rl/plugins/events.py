"""Plain records handed to plugin hooks, and the types hooks are given.

They are dataclasses, not dicts, so a hook implementation is type-checked
against what core actually sends; what is not a record (the CLI's
subcommands) is a public protocol, never a private class of the library
that happens to implement it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol


@dataclass(frozen=True)
class PluginAnnouncement:
    """What a plugin says about itself (shown by ``collimate plugins``).

    ``framework_version`` is ``None`` when the framework the plugin adapts is
    not installed: the plugin still loads and says so instead of failing.
    """

    name: str
    version: str
    framework: str | None = None
    framework_version: str | None = None
    detail: str = ""


@dataclass
class ExecEvent:
    """One exec as seen by observers: filled in before the call, completed
    (``response`` or ``error``, ``elapsed_ms``) after it."""

    wire: Literal["daemon", "gateway"]
    endpoint: str  # base URL or unix socket path of the server
    target: str  # session id, sandbox id or template id
    one_shot: bool
    request: dict[str, Any]
    started_at: float  # time.time()
    response: dict[str, Any] | None = None
    error: BaseException | None = None
    elapsed_ms: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Subcommands(Protocol):
    """What ``collimate_rl_cli_commands`` is given: the ``collimate`` parser's
    subcommands (what ``argparse.ArgumentParser.add_subparsers()`` returns).
    ``add_parser(name, help=..., ...)`` takes ``ArgumentParser``'s keywords
    (and ``help`` / ``aliases``) and returns the new subcommand's parser."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser: ...


#: What a subcommand's ``func`` returns on a usage error (as argparse exits
#: on one), and on Ctrl-C (128 + SIGINT): ``collimate grade`` and the views alike.
EXIT_USAGE: Final = 2
EXIT_INTERRUPTED: Final = 130


#: ``factory(ground_truth, entry) -> RewardSpec`` (see ``collimate_rl_reward_kinds``).
RewardFactory = Callable[[Any, str], Any]
#: ``factory(**kwargs) -> client`` (see ``collimate_rl_transports``).
TransportFactory = Callable[..., Any]
