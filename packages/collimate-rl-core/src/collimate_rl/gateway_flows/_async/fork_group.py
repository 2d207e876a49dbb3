"""The fork group ``AsyncForkGroup``.

One of a pair of twins: the async module is written by hand, its blocking
twin generated from it by ``tools/unasync.py`` (edit the async one, then
``hatch run lint:unasync``). The public module is
``collimate_rl.gateway_flows.fork_group`` (which says what a group is); what
both twins share is ``collimate_rl.gateway_flows._group_state``, and the
concurrency is ``run_each`` (an anyio task group here, a thread pool in the
blocking twin).
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from ..._aio import run_each, uncancellable
from ...errors import CollimateError
from ...sandbox._async import AsyncSandbox
from ...sandbox._state import ExecResult
from ...seeds import group_seeds
from .._group_state import (
    DEFAULT_CONCURRENCY,
    GroupBase,
    Labels,
    OnInfraError,
    check_chunk,
    check_on_infra_error,
    children_of,
    log,
    plan_group,
    raise_first,
)

__all__ = ["AsyncForkGroup"]

_Opened = TypeVar("_Opened", bound="_ClosedOnExit")


class _ClosedOnExit(abc.ABC):
    """``async with`` for a session and a fork group: opened on entering,
    closed on leaving; a teardown that fails while the block's own error
    propagates is logged (``_teardown_log``), so that error is the one raised."""

    _teardown_what: ClassVar[str]
    _teardown_log: ClassVar[logging.Logger]

    @abc.abstractmethod
    async def open(self: _Opened) -> _Opened:
        """Bring it up (idempotent); itself."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Tear it down (idempotent)."""

    async def __aenter__(self: _Opened) -> _Opened:
        return await self.open()

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            await self.close()
        except Exception:
            exc_type = exc_info[0]
            if exc_type is None:
                raise
            self._teardown_log.warning(
                "%s teardown failed while %s propagated",
                self._teardown_what,
                getattr(exc_type, "__name__", exc_type),
            )


class AsyncForkGroup(GroupBase, _ClosedOnExit):
    """``n`` live children of a :class:`~collimate_rl.AsyncSession`.

    Children are :class:`~collimate_rl.AsyncSandbox` handles (``exec``,
    ``upload_bytes``, ``download``), each with its seed as ``default_seed``.
    ``session.fork_group(n)`` forks an async group when it is awaited or
    entered, a blocking one at once::

        async with session.fork_group(8) as group:
            results = await group.exec_each("print(1)")
    """

    children: list[AsyncSandbox]
    _teardown_what = "fork group"
    _teardown_log = log

    def __init__(
        self,
        parent: Any,
        n: int,
        *,
        seed_mode: str = "crn",
        base_seed: str | None = None,
        labels: Labels = None,
        default_timeout: int = 30,
        max_per_call: int,
    ) -> None:
        super().__init__(parent, n)
        self.seeds = group_seeds(n, seed_mode, base_seed)
        self._calls = plan_group(n, max_per_call, labels)
        self._default_timeout = default_timeout
        self._opened = False
        # unasync: blocking only: self.open()

    async def open(self) -> AsyncForkGroup:
        """Fork the group (once; later calls return it as is)."""
        if self._opened:
            return self
        self._opened = True
        made: list[dict[str, Any]] = []
        try:
            for count, chunk in self._calls:
                got = children_of(await self.parent.fork(count, labels=chunk))
                made += got  # before the check: a short chunk's children are torn down too
                check_chunk(len(got), count, len(made), self.n)
        except BaseException:
            await uncancellable(self._teardown([c["id"] for c in made]))
            raise
        for child, seed in zip(made, self.seeds, strict=True):
            sb = AsyncSandbox.adopt(
                self.parent.client,
                child["id"],
                template=self.parent.template,
                default_timeout=self._default_timeout,
                default_seed=seed,
            )
            sb.endpoints = {str(k): str(v) for k, v in dict(child.get("endpoints") or {}).items()}
            self.children.append(sb)
        return self

    # unasync: async only
    def __await__(self) -> Generator[Any, None, AsyncForkGroup]:
        """``group = await session.fork_group(n)``: the group, forked."""
        return self.open().__await__()

    def __getitem__(self, i: int) -> AsyncSandbox:
        return self.children[i]

    async def _teardown(self, ids: list[str]) -> list[BaseException]:
        errors: list[BaseException] = []
        for child_id in ids:
            try:
                await self.parent.client.delete_sandbox(child_id)
            except Exception as exc:  # keep deleting the rest
                log.warning("could not delete fork child %s: %s", child_id, exc)
                errors.append(exc)
        return errors

    async def _run(
        self, worker: Callable[[int], Awaitable[Any]], concurrency: int | None
    ) -> list[Any]:
        n = len(self.children)
        limit = max(1, min(n or 1, concurrency or DEFAULT_CONCURRENCY))
        outcomes, errors = await run_each(worker, n, limit)
        raise_first(errors)
        return outcomes

    async def exec_each(
        self,
        code: str | None = None,
        *,
        command: str | None = None,
        commands: Sequence[Sequence[str]] | None = None,
        files: Sequence[Mapping[str, str]] | None = None,
        timeout_seconds: int | None = None,
        concurrency: int | None = None,
        on_infra_error: OnInfraError = "raise",
    ) -> list[ExecResult | None]:
        """The same exec in every child, in parallel; results by position.

        ``on_infra_error="raise"`` raises the first failed child's error once
        all have finished (resample the group); ``"none"`` leaves ``None`` in
        a failed child's slot.
        """
        check_on_infra_error(on_infra_error)

        async def one(i: int) -> ExecResult | None:
            try:
                return await self.children[i].exec(
                    code,
                    command=command,
                    commands=commands,
                    files=files,
                    timeout_seconds=timeout_seconds,
                )
            except CollimateError:
                if on_infra_error == "raise":
                    raise
                return None

        return await self._run(one, concurrency)

    async def map(
        self,
        fn: Callable[[int, AsyncSandbox], Awaitable[Any]],
        *,
        concurrency: int | None = None,
        on_infra_error: OnInfraError = "raise",
    ) -> list[Any]:
        """``fn(index, child)`` for every child, in parallel; results by
        position (an async group's ``fn`` is a coroutine function).

        With ``on_infra_error="none"`` a :class:`~collimate_rl.CollimateError`
        becomes ``None``; any other exception (a bug in ``fn``) always raises.
        """
        check_on_infra_error(on_infra_error)

        async def one(i: int) -> Any:
            try:
                return await fn(i, self.children[i])
            except CollimateError:
                if on_infra_error == "raise":
                    raise
                return None

        return await self._run(one, concurrency)

    async def close(self) -> None:
        """Delete every child (the parent stays); raises the first failed
        delete after trying them all (an async group's deletes run to the
        end even while its caller is being cancelled)."""
        ids = [c.session_id for c in self.children if c.session_id]
        for c in self.children:
            c.session_id = None  # a child's own close() is now a no-op
        self.children = []
        box: list[list[BaseException]] = []

        async def run() -> None:
            box.append(await self._teardown(ids))

        await uncancellable(run())
        if box and box[0]:
            raise box[0][0]
