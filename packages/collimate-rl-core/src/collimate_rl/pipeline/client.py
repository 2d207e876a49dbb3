"""What the pipeline asks of the client it is handed, as types.

A grade goes out on any client of the session surface, blocking or async
(:data:`GradingClient`): its ``exec_once`` (a fresh clone) or
``session_exec`` (a warm session). Programs judged like a contest
(:class:`~collimate_rl.ContestReward`) go out as one :class:`JudgeCall`
instead, which needs a client that :class:`Judges` (both wires' clients
do; a client of the session surface alone gets a clear error).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, Union, runtime_checkable

if TYPE_CHECKING:
    from ..transport import AsyncSessionClient, SessionClient

__all__ = ["GradingClient", "JudgeCall", "Judges"]

#: the clients a grade is sent with: the session surface, either flavour
GradingClient = Union["SessionClient", "AsyncSessionClient"]


@runtime_checkable
class Judges(Protocol):
    """A client that judges programs like a contest (``POST /v1/judge``)."""

    def judge(
        self, problems: Sequence[Mapping[str, Any]], candidates: Sequence[Mapping[str, Any]]
    ) -> Any:
        """The server's answer (or an awaitable of it, for an async client)."""


@dataclass(frozen=True)
class JudgeCall:
    """One judge request: each problem once, and each candidate naming its
    problem by position."""

    problems: list[dict[str, Any]]
    candidates: list[dict[str, Any]]
