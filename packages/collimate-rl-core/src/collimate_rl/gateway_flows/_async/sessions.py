"""The gateway session ``AsyncSession``.

One of a pair of twins: the async module is written by hand, its blocking
twin generated from it by ``tools/unasync.py`` (edit the async one, then
``hatch run lint:unasync``). The public module is
``collimate_rl.gateway_flows.sessions`` (which says what a session is); what
both twins share is ``collimate_rl.gateway_flows._session_state``.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..._aio import uncancellable
from ...sandbox._async import AsyncIngress
from ...sandbox._state import ExecResult, exec_kwargs
from ...wire import DEFAULT_EXEC_TIMEOUT_S
from .._group_state import Labels
from .._session_state import SessionState, log
from ..status import fork_cap
from .fork_group import AsyncForkGroup, _ClosedOnExit

if TYPE_CHECKING:
    from ...gateway._async import AsyncGatewayClient
__all__ = ["AsyncSession"]


class AsyncSession(SessionState, _ClosedOnExit, AsyncIngress):
    """One sandbox of ``template`` on a :class:`~collimate_rl.AsyncGatewayClient`,
    created on entering its ``async with`` block (or on first use) and
    deleted on leaving it."""

    _teardown_what = "session"
    _teardown_log = log

    def __init__(
        self,
        client: AsyncGatewayClient,
        template: Any,
        *,
        label: str | None = None,
        labels: Mapping[str, str] | None = None,
        egress: Mapping[str, Any] | None = None,
        default_timeout: int = DEFAULT_EXEC_TIMEOUT_S,
    ) -> None:
        super().__init__(
            template, label=label, labels=labels, egress=egress, default_timeout=default_timeout
        )
        self.client = client

    async def open(self) -> AsyncSession:
        """Create the sandbox (once)."""
        if self.id is None:
            self._opened(
                await self.client.create_sandbox(
                    self.template, label=self.label, labels=self.labels, egress=self.egress
                )
            )
        return self

    # unasync: async only
    def __await__(self) -> Generator[Any, None, AsyncSession]:
        """``session = await client.session(t)``: the session, opened."""
        return self.open().__await__()

    async def exec(
        self,
        code: str | None = None,
        *,
        command: str | None = None,
        commands: Sequence[Sequence[str]] | None = None,
        files: Sequence[Mapping[str, str]] | None = None,
        timeout_seconds: int | None = None,
        seed: str | None = None,
    ) -> ExecResult:
        """Run in the sandbox (opened on first use). A demo key over its limit
        raises :class:`~collimate_rl.DemoTierLimit` with the server's words."""
        body = exec_kwargs(
            code, command, commands, files, timeout_seconds, seed, self.default_timeout
        )
        await self.open()
        assert self.id is not None
        return ExecResult.from_response(await self.client.exec(self.id, **body))

    async def fork(self, n: int = 1, labels: Labels = None) -> list[dict[str, Any]]:
        """The raw ``fork`` call: ``n`` live children as ``[{id, endpoints?}]``.
        You own them (delete each); over the tier's cap the server says 400."""
        await self.open()
        assert self.id is not None
        answer = await self.client.fork(self.id, count=n, labels=labels)
        return [dict(c) for c in answer.get("children") or []]

    def fork_group(
        self,
        n: int,
        *,
        seed_mode: str = "crn",
        base_seed: str | None = None,
        labels: Labels = None,
        default_timeout: int | None = None,
        max_per_call: int | None = None,
    ) -> AsyncForkGroup:
        """A group of exactly ``n`` children (see :class:`AsyncForkGroup`; an
        async group forks when awaited or entered).

        ``max_per_call`` defaults to the key tier's cap (4 / 32 / 64).
        Bad arguments fail before anything is created.
        """
        group = AsyncForkGroup(
            self,
            n,
            seed_mode=seed_mode,
            base_seed=base_seed,
            labels=labels,
            default_timeout=default_timeout or self.default_timeout,
            max_per_call=max_per_call if max_per_call is not None else fork_cap(self.client),
        )
        self._groups.append(group)
        return group

    async def suspend(self) -> dict[str, Any]:
        """Stop the sandbox's processes; the meter pauses. ``{id, state}``."""
        return await self.client.suspend(self._live_id("suspend"))

    async def resume(self) -> dict[str, Any]:
        """Continue a suspended sandbox. ``{id, state}``."""
        return await self.client.resume(self._live_id("resume"))

    async def _ingress(self, what: str) -> tuple[AsyncGatewayClient, str]:
        await self.open()
        assert self.id is not None
        return self.client, self.id

    async def close(self) -> None:
        """Delete the sandbox and the children of its fork groups
        (idempotent; a sandbox already gone is fine; an async session's
        delete runs to the end even while its caller is being cancelled)."""
        groups, self._groups = self._groups, []
        for group in groups:
            try:
                await group.close()
            except Exception as exc:  # the parent still goes
                log.warning("could not close a fork group of %s: %s", self.id, exc)
        sandbox_id, self.id = self.id, None
        if sandbox_id is not None:
            await uncancellable(self.client.delete_sandbox(sandbox_id))
