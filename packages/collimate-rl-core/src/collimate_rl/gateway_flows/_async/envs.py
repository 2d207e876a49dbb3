"""The environment ``AsyncEnv``.

One of a pair of twins: the async module is written by hand, its blocking
twin generated from it by ``tools/unasync.py`` (edit the async one, then
``hatch run lint:unasync``). The public module is
``collimate_rl.gateway_flows.envs`` (which says what an environment is);
what both twins share is ``collimate_rl.gateway_flows._env_state``.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any

from ..._aio import uncancellable
from .._env_state import (
    DEFAULT_READY_TIMEOUT,
    NOT_OPEN,
    EnvState,
    catalog_row,
    is_catalog,
    log,
)
from ..status import TemplateStatus
from .sessions import AsyncSession
from .templates import AsyncTemplate, AsyncTemplateHandle

if TYPE_CHECKING:
    from ...gateway._async import AsyncGatewayClient

__all__ = ["AsyncEnv"]


class AsyncEnv(EnvState):
    """An environment with its width declared (see
    :mod:`collimate_rl.gateway_flows.envs`)::

        async with client.env("python", width=64) as env:
            async with env.sandbox() as sess: ...

    An async environment is declared when it is awaited or entered, a
    blocking one when it is constructed.
    """

    def __init__(
        self,
        client: AsyncGatewayClient,
        ref: str,
        *,
        width: int | None = None,
        name: str | None = None,
        ready_timeout: float = DEFAULT_READY_TIMEOUT,
        poll_interval: float = 1.0,
    ) -> None:
        super().__init__(ref, width, name)
        self.client = client
        self._ready_timeout = ready_timeout
        self._poll_interval = poll_interval
        self._opened = False
        # unasync: blocking only: self.open()

    async def open(self) -> AsyncEnv:
        """Declare the width (once): a catalog ref is baked into a template
        of yours first, and this returns once the bake is ``Live``."""
        if self._opened:
            return self
        self._opened = True
        width = self.width
        row = catalog_row(await self.client.images(), self.ref)
        if width is None:
            self.id = str((row or {}).get("id") or self.ref)
        elif is_catalog(row):
            assert row is not None
            handle = await AsyncTemplate.bake(
                self.client,
                name=self.name or self.ref,
                image=str(row.get("image") or self.ref),
                width=width,
            )
            self.id, self.baked = handle.id, True
            try:
                await handle.wait(
                    self._ready_timeout, poll_interval=self._poll_interval, until="live"
                )
            except BaseException:
                await self.release()
                raise
        else:
            self.id = str((row or {}).get("id") or self.ref)
            await self.client.expect_width(self.id, width)
        return self

    # unasync: async only
    def __await__(self) -> Generator[Any, None, AsyncEnv]:
        """``env = await client.env(ref, width=n)``: the environment, declared."""
        return self.open().__await__()

    def sandbox(
        self,
        *,
        label: str | None = None,
        egress: Mapping[str, Any] | None = None,
        default_timeout: int = 30,
    ) -> AsyncSession:
        """A :class:`~collimate_rl.AsyncSession` on this environment (open it
        with ``async with``)."""
        if not self._opened:
            raise RuntimeError(NOT_OPEN)
        return AsyncSession(
            self.client, self.id, label=label, egress=egress, default_timeout=default_timeout
        )

    session = sandbox

    async def status(self) -> TemplateStatus:
        """One reading of the environment's template."""
        return await AsyncTemplate.status(self.client, self.id)

    async def wait(self, timeout: float = 600.0, **kwargs: Any) -> TemplateStatus:
        """Until the pool reached the width (see :meth:`AsyncTemplateHandle.wait`)."""
        handle = AsyncTemplateHandle(self.client, self.id, declared=self.width or 0)
        return await handle.wait(timeout, **kwargs)

    async def release(self) -> None:
        """End the session's declaration (once; never raises; an async
        environment's release runs to the end even under cancellation)."""
        if self._released or not self._opened:
            return
        self._released = True

        async def run() -> None:
            try:
                await self.client.release_template(self.id)
            except Exception as exc:
                log.warning(
                    "could not release environment %s (it decays on its own): %s", self.id, exc
                )

        await uncancellable(run())

    async def __aenter__(self) -> AsyncEnv:
        return await self.open()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.release()
