"""The *session surface*: what every client of either wire implements.

Written once, as coroutines (:class:`AsyncSessionClient`); the blocking
protocol ``SessionClient`` is generated from it (``tools/unasync.py``).
Everything above the transports (grading, ``Sandbox``, the adapters) is
typed against these two and never asks which wire is underneath.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ["AsyncSessionClient"]


@runtime_checkable
class AsyncSessionClient(Protocol):
    """The session surface both wires implement 1:1, one method per route
    of docs/wire.md: what the ``connect`` functions return."""

    async def health(self) -> dict[str, Any]: ...

    async def images(self) -> list[dict[str, Any]]: ...

    async def create_session(
        self, template_id: str, *, egress: Mapping[str, Any] | None = None
    ) -> dict[str, Any]: ...

    async def session_exec(
        self,
        session_id: str,
        *,
        command: str | None = None,
        code: str | None = None,
        commands: Sequence[Sequence[str]] | None = None,
        files: Sequence[Mapping[str, str]] | None = None,
        timeout_seconds: int = 30,
        seed: str | None = None,
    ) -> dict[str, Any]: ...

    async def exec_once(
        self,
        template_id: str,
        *,
        command: str | None = None,
        code: str | None = None,
        commands: Sequence[Sequence[str]] | None = None,
        files: Sequence[Mapping[str, str]] | None = None,
        timeout_seconds: int = 30,
        seed: str | None = None,
        egress: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]: ...

    async def get_session(self, session_id: str) -> dict[str, Any]: ...

    async def list_sessions(self) -> list[dict[str, Any]]: ...

    async def delete_session(self, session_id: str) -> dict[str, Any]: ...

    async def aclose(self) -> None: ...

    async def __aenter__(self) -> Any: ...

    async def __aexit__(self, *exc: object) -> None: ...
