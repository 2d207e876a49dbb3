"""Baking: ``Template.bake`` -> a handle whose ``wait`` follows the bake.

A bake (``POST /v1/templates``) walks ``Pending -> Converting -> Distributing
-> Live`` and then fills its pool to the declared width; or it ends
``Failed`` with the build's error. :meth:`TemplateHandle.wait` polls
``GET /v1/templates/{id}``, shows each reading to ``on_update`` (the CLI's
live view), and with ``fail_fast`` turns ``Failed`` into
:class:`~collimate_rl.TemplateBakeFailed` at once instead of at the timeout.
``Template.status`` and ``Template.attach`` serve a process that did not bake
(a second terminal, a restarted job). :class:`AsyncTemplate` and
:class:`AsyncTemplateHandle` are the coroutine twins.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Literal

import anyio

from ..errors import GatewayError, TemplateBakeFailed
from .status import Ready, TemplateStatus

if TYPE_CHECKING:
    from ..gateway import AsyncGatewayClient, GatewayClient

__all__ = ["AsyncTemplate", "AsyncTemplateHandle", "Template", "TemplateHandle"]

WaitUntil = Literal["converged", "live"]
OnUpdate = Callable[[TemplateStatus], None]

#: The status carried by the error when the template vanished mid-wait.
_GONE: Final = {"phase": "Failed", "error": "the template was deleted (or never existed)"}


def _check_until(until: str) -> None:
    if until not in ("converged", "live"):
        raise ValueError(f"until must be 'converged' or 'live', got {until!r}")


def _reached(status: TemplateStatus, until: str) -> bool:
    # A full pool counts only once the bake is Live: a server may report the
    # pool converged while it is still distributing the artifact.
    return status.live and (status.converged or until == "live")


def _raise_if_failed(template_id: str, status: TemplateStatus, until: str) -> None:
    # A finished bake outranks a stale error left from an earlier attempt.
    if status.failed and not _reached(status, until):
        raise TemplateBakeFailed(
            f"the bake of template {template_id} failed after {status.build_fails} "
            f"build attempt(s): {status.error or 'the server gave no reason'}",
            status,
        )


def _timed_out(
    template_id: str, status: TemplateStatus, timeout: float, until: str
) -> TimeoutError:
    return TimeoutError(
        f"template {template_id} was not {until} within {timeout:g}s "
        f"(last seen: {status.summary()})"
    )


def _vanished(template_id: str, exc: GatewayError) -> TemplateBakeFailed:
    status = TemplateStatus.from_response({**_GONE, "id": template_id})
    err = TemplateBakeFailed(f"template {template_id} disappeared during the bake", status)
    err.__cause__ = exc
    return err


def _bake_body(ready: Ready | None, width: int) -> Any:
    if not isinstance(width, int) or isinstance(width, bool) or width < 1:
        raise ValueError(f"width must be an int >= 1, got {width!r}")
    if ready is not None and not isinstance(ready, Ready):
        raise TypeError(f"ready must be a Ready, got {type(ready).__name__}")
    return ready.to_wire() if ready is not None else None


class _HandleFields:
    def __init__(
        self,
        template_id: str,
        *,
        name: str = "",
        image: str = "",
        declared: int = 0,
        bake_mode: str = "",
    ) -> None:
        if not template_id:
            raise GatewayError("the gateway answered a bake without a template id")
        self.id = template_id
        self.name = name
        self.image = image
        self.declared = declared
        self.bake_mode = bake_mode

    def _fill(self, status: TemplateStatus) -> TemplateStatus:
        # Right after a bake the server may not report the declared width yet.
        if not status.declared and self.declared:
            status.declared = self.declared
        status.name = status.name or self.name
        status.image = status.image or self.image
        status.id = status.id or self.id
        return status

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.id!r}, image={self.image!r})"


class TemplateHandle(_HandleFields):
    """A baked (or baking) template: :meth:`status` reads it once,
    :meth:`wait` follows it to the end."""

    def __init__(self, client: GatewayClient, template_id: str, **fields: Any) -> None:
        super().__init__(template_id, **fields)
        self.client = client

    def status(self) -> TemplateStatus:
        return self._fill(TemplateStatus.from_response(self.client.get_template(self.id)))

    def wait(
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
        _check_until(until)
        deadline = time.monotonic() + timeout
        while True:
            try:
                status = self.status()
            except GatewayError as exc:
                if fail_fast and exc.code == "not_found":
                    raise _vanished(self.id, exc) from exc
                raise
            if on_update is not None:
                on_update(status)
            if _reached(status, until):
                return status
            if fail_fast:
                _raise_if_failed(self.id, status, until)
            if time.monotonic() >= deadline:
                raise _timed_out(self.id, status, timeout, until)
            time.sleep(max(0.0, min(poll_interval, deadline - time.monotonic())))


class AsyncTemplateHandle(_HandleFields):
    """:class:`TemplateHandle` over an :class:`~collimate_rl.AsyncGatewayClient`."""

    def __init__(self, client: AsyncGatewayClient, template_id: str, **fields: Any) -> None:
        super().__init__(template_id, **fields)
        self.client = client

    async def status(self) -> TemplateStatus:
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
        """See :meth:`TemplateHandle.wait`."""
        _check_until(until)
        deadline = time.monotonic() + timeout
        while True:
            try:
                status = await self.status()
            except GatewayError as exc:
                if fail_fast and exc.code == "not_found":
                    raise _vanished(self.id, exc) from exc
                raise
            if on_update is not None:
                on_update(status)
            if _reached(status, until):
                return status
            if fail_fast:
                _raise_if_failed(self.id, status, until)
            if time.monotonic() >= deadline:
                raise _timed_out(self.id, status, timeout, until)
            await anyio.sleep(max(0.0, min(poll_interval, deadline - time.monotonic())))


def _handle_fields(answer: dict[str, Any], name: str, image: str, width: int) -> dict[str, Any]:
    return {
        "name": str(answer.get("name") or name),
        "image": str(answer.get("image") or image),
        "declared": width,
        "bake_mode": str(answer.get("bake_mode") or ""),
    }


class Template:
    """Bake your own image (pro/ent), or look at a template from anywhere."""

    @staticmethod
    def bake(
        client: GatewayClient,
        *,
        name: str,
        image: str,
        ready: Ready | None = None,
        width: int,
        cold_fraction: float = 0,
    ) -> TemplateHandle:
        """Start baking ``image`` (``POST /v1/templates``) and return its handle.

        ``width`` is how wide you expect to fan out: the platform warms a pool
        that wide. Baking the same request again names the same template.
        A demo key raises :class:`~collimate_rl.GatewayError` (``forbidden``,
        or ``network_requires_pro`` for a NIC).
        """
        body = _bake_body(ready, width)  # bad input fails before any request
        answer = client.create_template(
            name=name,
            image=image,
            ready=body,
            width=width,
            cold_fraction=cold_fraction,
        )
        return TemplateHandle(
            client, str(answer.get("id") or ""), **_handle_fields(answer, name, image, width)
        )

    @staticmethod
    def status(client: GatewayClient, template_id: str) -> TemplateStatus:
        """One reading of ``template_id`` (404 ``not_found`` if it is not yours)."""
        return TemplateStatus.from_response(client.get_template(template_id))

    @staticmethod
    def attach(client: GatewayClient, template_id: str) -> TemplateHandle:
        """A handle to an existing template, checked to exist (one ``GET``)."""
        st = Template.status(client, template_id)
        return TemplateHandle(
            client,
            template_id,
            name=st.name,
            image=st.image,
            declared=st.declared,
            bake_mode=st.bake_mode,
        )


class AsyncTemplate:
    """:class:`Template` for an :class:`~collimate_rl.AsyncGatewayClient`."""

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
        body = _bake_body(ready, width)  # bad input fails before any request
        answer = await client.create_template(
            name=name,
            image=image,
            ready=body,
            width=width,
            cold_fraction=cold_fraction,
        )
        return AsyncTemplateHandle(
            client, str(answer.get("id") or ""), **_handle_fields(answer, name, image, width)
        )

    @staticmethod
    async def status(client: AsyncGatewayClient, template_id: str) -> TemplateStatus:
        return TemplateStatus.from_response(await client.get_template(template_id))

    @staticmethod
    async def attach(client: AsyncGatewayClient, template_id: str) -> AsyncTemplateHandle:
        st = await AsyncTemplate.status(client, template_id)
        return AsyncTemplateHandle(
            client,
            template_id,
            name=st.name,
            image=st.image,
            declared=st.declared,
            bake_mode=st.bake_mode,
        )
