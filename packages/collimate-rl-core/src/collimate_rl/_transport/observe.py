"""Calling the exec observer hooks around every exec.

Observers (metrics, tracing, the replay manifest) see each exec twice:
``collimate_rl_before_exec(event)`` before it is sent and
``collimate_rl_after_exec(event)`` once it answered or raised, exactly once
per ``before``. The exec hot path stays cheap: when no plugin implements
either hook, no event is built at all.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Literal

from ..plugins.events import ExecEvent
from ..plugins.manager import get_plugin_manager

__all__ = ["ExecObservation"]


def _exec_hooks() -> Any | None:
    """The plugin manager's hook relay when some plugin observes execs."""
    hook = get_plugin_manager().hook
    if (
        hook.collimate_rl_before_exec.get_hookimpls()
        or hook.collimate_rl_after_exec.get_hookimpls()
    ):
        return hook
    return None


class ExecObservation:
    """One observed exec: :meth:`start` fires ``before_exec``; exactly one of
    :meth:`succeeded` / :meth:`failed` fires ``after_exec``."""

    __slots__ = ("_hook", "_t0", "event")

    def __init__(self, hook: Any, event: ExecEvent) -> None:
        self._hook = hook
        self.event = event
        self._t0 = time.perf_counter()

    @classmethod
    def start(
        cls,
        *,
        wire: Literal["daemon", "gateway"],
        endpoint: str,
        target: str,
        one_shot: bool,
        request: Mapping[str, Any],
    ) -> ExecObservation | None:
        """``None`` (and nothing built) when nobody observes execs."""
        hook = _exec_hooks()
        if hook is None:
            return None
        event = ExecEvent(
            wire=wire,
            endpoint=endpoint,
            target=target,
            one_shot=one_shot,
            request=dict(request),
            started_at=time.time(),
        )
        hook.collimate_rl_before_exec(event=event)
        return cls(hook, event)

    def succeeded(self, response: Any) -> None:
        self.event.response = response if isinstance(response, dict) else {"value": response}
        self._finish()

    def failed(self, error: BaseException) -> None:
        self.event.error = error
        self._finish()

    def _finish(self) -> None:
        self.event.elapsed_ms = (time.perf_counter() - self._t0) * 1000.0
        self._hook.collimate_rl_after_exec(event=self.event)
