"""Environments: declare how wide the next session is, release it after.

An environment is what you run in (a catalog image, or a template you
baked); you only declare its width, the platform keeps the pool.
``client.env(ref, width=N)``:

* a catalog ref (an image id or name from ``client.images()``) is baked into
  your own template with the pool width ``N`` declared up front; the call
  returns once the bake is ``Live`` (a ``Failed`` bake raises
  :class:`~collimate_rl.TemplateBakeFailed`);
* a template you own gets ``N`` declared on it (``expect``);
* ``width=None`` declares nothing: a plain handle, nothing to release.

Leaving the ``with`` block releases the declaration (``release``), also when
the block raised, so warm capacity stops being held at once. A failed
release is logged, not raised: an idle environment decays to its baseline
anyway, and the block's own error must stay the one you see.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .._aio import uncancellable
from ..gateway import register_flows
from .sessions import AsyncSession, Session
from .status import TemplateStatus
from .templates import AsyncTemplate, AsyncTemplateHandle, Template, TemplateHandle

if TYPE_CHECKING:
    from ..gateway import AsyncGatewayClient, GatewayClient

__all__ = ["AsyncEnv", "Env", "open_env"]

log = logging.getLogger("collimate_rl.env")

#: How long ``client.env`` waits for a catalog bake to go ``Live``.
DEFAULT_READY_TIMEOUT = 600.0


def _check_width(width: int | None) -> None:
    if width is not None and (not isinstance(width, int) or isinstance(width, bool) or width < 1):
        raise ValueError(f"width must be an int >= 1 (or None), got {width!r}")


def _catalog_row(rows: list[dict[str, Any]], ref: str) -> dict[str, Any] | None:
    for key in ("id", "name"):  # an id match outranks a name match
        for row in rows:
            if row.get(key) == ref:
                return row
    return None


def _is_catalog(row: Mapping[str, Any] | None) -> bool:
    return row is not None and row.get("visibility", "public") == "public"


class _EnvState:
    def __init__(self, ref: str, width: int | None, name: str | None) -> None:
        if not isinstance(ref, str) or not ref:
            raise ValueError(f"env needs a catalog ref or template id, got {ref!r}")
        _check_width(width)
        self.ref = ref
        self.width = width
        self.name = name
        self.id: str = ref
        self.baked = False
        self._released = width is None  # nothing declared: nothing to release

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.ref!r}, id={self.id!r}, width={self.width})"


class Env(_EnvState):
    """An environment with its width declared (blocking client)."""

    def __init__(
        self,
        client: GatewayClient,
        ref: str,
        *,
        width: int | None = None,
        name: str | None = None,
        ready_timeout: float = DEFAULT_READY_TIMEOUT,
        poll_interval: float = 1.0,
    ) -> None:
        super().__init__(ref, width, name)
        self.client = client
        row = _catalog_row(client.images(), ref)
        if width is None:
            self.id = str((row or {}).get("id") or ref)
        elif _is_catalog(row):
            assert row is not None
            handle = Template.bake(
                client, name=name or ref, image=str(row.get("image") or ref), width=width
            )
            self.id, self.baked = handle.id, True
            try:
                handle.wait(ready_timeout, poll_interval=poll_interval, until="live")
            except BaseException:
                self.release()
                raise
        else:
            self.id = str((row or {}).get("id") or ref)
            client.expect_width(self.id, width)

    def sandbox(
        self,
        *,
        label: str | None = None,
        egress: Mapping[str, Any] | None = None,
        default_timeout: int = 30,
    ) -> Session:
        """A :class:`~collimate_rl.Session` on this environment (open it with ``with``)."""
        return Session(
            self.client, self.id, label=label, egress=egress, default_timeout=default_timeout
        )

    session = sandbox

    def status(self) -> TemplateStatus:
        return Template.status(self.client, self.id)

    def wait(self, timeout: float = 600.0, **kwargs: Any) -> TemplateStatus:
        """Until the pool reached the width (see :meth:`TemplateHandle.wait`)."""
        return TemplateHandle(self.client, self.id, declared=self.width or 0).wait(
            timeout, **kwargs
        )

    def release(self) -> None:
        """End the session's declaration (once; never raises)."""
        if self._released:
            return
        self._released = True
        try:
            self.client.release_template(self.id)
        except Exception as exc:
            log.warning("could not release environment %s (it decays on its own): %s", self.id, exc)

    def __enter__(self) -> Env:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


class AsyncEnv(_EnvState):
    """:class:`Env` on an :class:`~collimate_rl.AsyncGatewayClient`; the
    declaration is made when it is awaited or entered::

        async with client.env("python", width=64) as env:
            async with env.sandbox() as sess: ...
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

    async def open(self) -> AsyncEnv:
        if self._opened:
            return self
        self._opened = True
        width = self.width
        row = _catalog_row(await self.client.images(), self.ref)
        if width is None:
            self.id = str((row or {}).get("id") or self.ref)
        elif _is_catalog(row):
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

    def __await__(self) -> Generator[Any, None, AsyncEnv]:
        return self.open().__await__()

    def sandbox(
        self,
        *,
        label: str | None = None,
        egress: Mapping[str, Any] | None = None,
        default_timeout: int = 30,
    ) -> AsyncSession:
        if not self._opened:
            raise RuntimeError("await the environment (or enter it) before opening sandboxes")
        return AsyncSession(
            self.client, self.id, label=label, egress=egress, default_timeout=default_timeout
        )

    session = sandbox

    async def status(self) -> TemplateStatus:
        return await AsyncTemplate.status(self.client, self.id)

    async def wait(self, timeout: float = 600.0, **kwargs: Any) -> TemplateStatus:
        handle = AsyncTemplateHandle(self.client, self.id, declared=self.width or 0)
        return await handle.wait(timeout, **kwargs)

    async def release(self) -> None:
        """See :meth:`Env.release`; runs to the end even under cancellation."""
        if self._released or not self._opened:
            return
        self._released = True

        async def run() -> None:
            try:
                await self.client.release_template(self.id)
            except Exception as exc:
                log.warning("could not release environment %s: %s", self.id, exc)

        await uncancellable(run())

    async def __aenter__(self) -> AsyncEnv:
        return await self.open()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.release()


def open_env(client: Any, ref: str, **kwargs: Any) -> Env | AsyncEnv:
    """``client.env(...)`` for either client flavour."""
    from ..gateway import AsyncGatewayClient

    if isinstance(client, AsyncGatewayClient):
        return AsyncEnv(client, ref, **kwargs)
    return Env(client, ref, **kwargs)


# ``client.env(...)`` builds these (the client is a layer below: see gateway.py)
register_flows(Env=Env, AsyncEnv=AsyncEnv)
