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

    async def health(self) -> dict[str, Any]:
        """The server's health and what it can do (``GET /v1/health``)."""

    async def images(self) -> list[dict[str, Any]]:
        """The image catalog (the gateway's; a daemon raises: it has none)."""

    async def create_session(
        self, template_id: str, *, egress: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """A new sandbox of ``template_id``; its description, with its id."""

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
    ) -> dict[str, Any]:
        """Run a command, code or argv list in the session; the exec's result."""

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
    ) -> dict[str, Any]:
        """One exec in a fresh, throwaway clone of ``template_id`` (deleted after)."""

    async def get_session(self, session_id: str) -> dict[str, Any]:
        """One session's description."""

    async def list_sessions(self) -> list[dict[str, Any]]:
        """The live sessions (of this daemon, or of this key on the gateway)."""

    async def delete_session(self, session_id: str) -> dict[str, Any]:
        """``{deleted, session_id}``; never raises because it was already gone."""

    async def aclose(self) -> None:
        """Close the connections; the client is not used after."""

    async def __aenter__(self) -> Any:
        """The client itself, closed on leaving the block."""

    async def __aexit__(self, *exc: object) -> None:
        """Close the client."""
