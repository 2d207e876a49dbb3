"""Baking: ``AsyncTemplate`` and ``AsyncTemplateHandle``.

One of a pair of twins: the async module is written by hand, its blocking
twin generated from it by ``tools/unasync.py`` (edit the async one, then
``hatch run lint:unasync``). The public module is
``collimate_rl.gateway_flows.templates`` (which says what a bake is); what
both twins share is ``collimate_rl.gateway_flows._template_state``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import anyio

from ...errors import GatewayError
from .._template_state import (
    HandleFields,
    OnUpdate,
    WaitUntil,
    bake_body,
    check_until,
    handle_fields,
    raise_if_failed,
    reached,
    read_fields,
    timed_out,
    vanished,
)
from ..status import Ready, TemplateStatus

if TYPE_CHECKING:
    from ...gateway._async import AsyncGatewayClient

__all__ = ["AsyncTemplate", "AsyncTemplateHandle"]


class AsyncTemplateHandle(HandleFields):
    """A baked (or baking) template: :meth:`status` reads it once,
    :meth:`wait` follows it to the end."""

    def __init__(self, client: AsyncGatewayClient, template_id: str, **fields: Any) -> None:
        super().__init__(template_id, **fields)
        self.client = client

    async def status(self) -> TemplateStatus:
        """One reading of the template (the declared width filled in)."""
        return self._fill(TemplateStatus.from_response(await self.client.get_template(self.id)))

    async def wait(
        self,
        timeout: float = 600.0,
        *,
        poll_interval: float = 1.0,
        on_update: OnUpdate | None = None,
        fail_fast: bool = True,
        until: WaitUntil = "converged",
    ) -> TemplateStatus:
        """Poll until the bake is ``Live`` with its pool at the declared width
        (``until="live"``: only ``Live``) and return the last reading.

        Raises :class:`~collimate_rl.TemplateBakeFailed` when the bake is
        ``Failed`` or the template vanished (``fail_fast``; otherwise it keeps
        polling, as the server may retry the build) and :class:`TimeoutError`
        past ``timeout`` seconds.
        """
        check_until(until)
        deadline = time.monotonic() + timeout
        while True:
            try:
                status = await self.status()
            except GatewayError as exc:
                if fail_fast and exc.code == "not_found":
                    raise vanished(self.id, exc) from exc
                raise
            if on_update is not None:
                on_update(status)
            if reached(status, until):
                return status
            if fail_fast:
                raise_if_failed(self.id, status, until)
            if time.monotonic() >= deadline:
                raise timed_out(self.id, status, timeout, until)
            await anyio.sleep(max(0.0, min(poll_interval, deadline - time.monotonic())))


class AsyncTemplate:
    """Bake your own image (pro/ent), or look at a template from anywhere."""

    @staticmethod
    async def bake(
        client: AsyncGatewayClient,
        *,
        name: str,
        image: str,
        ready: Ready | None = None,
        width: int,
        cold_fraction: float = 0,
    ) -> AsyncTemplateHandle:
        """Start baking ``image`` (``POST /v1/templates``) and return its handle.

        ``width`` is how wide you expect to fan out: the platform warms a pool
        that wide. Baking the same request again names the same template.
        A demo key raises :class:`~collimate_rl.GatewayError` (``forbidden``,
        or ``network_requires_pro`` for a NIC).
        """
        body = bake_body(ready, width)  # bad input fails before any request
        answer = await client.create_template(
            name=name,
            image=image,
            ready=body,
            width=width,
            cold_fraction=cold_fraction,
        )
        return AsyncTemplateHandle(
            client, str(answer.get("id") or ""), **handle_fields(answer, name, image, width)
        )

    @staticmethod
    async def status(client: AsyncGatewayClient, template_id: str) -> TemplateStatus:
        """One reading of ``template_id`` (404 ``not_found`` if it is not yours)."""
        return TemplateStatus.from_response(await client.get_template(template_id))

    @staticmethod
    async def attach(client: AsyncGatewayClient, template_id: str) -> AsyncTemplateHandle:
        """A handle to an existing template, checked to exist (one ``GET``)."""
        st = await AsyncTemplate.status(client, template_id)
        return AsyncTemplateHandle(client, template_id, **read_fields(st))
