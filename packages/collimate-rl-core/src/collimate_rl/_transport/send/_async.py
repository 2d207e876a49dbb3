"""The send loop ``AsyncHTTP``, and ``AsyncHTTPClient``, what a client over it shares.

One of a pair of twins: the async module is written by hand, its blocking
twin generated from it by ``tools/unasync.py`` (edit the async one, then
``hatch run lint:unasync``). Each loop sends a call, turns the answer into a
value or a typed error and asks the retry policy whether to go again; what
both share is ``collimate_rl._transport.send_base``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from ...errors import CollimateError
from ...retry import RetryPolicy
from ...wire import DEFAULT_EXEC_TIMEOUT_S, build_exec_request
from ..calls import Argvs, Call, Files
from ..pool import AsyncPool, HttpSettings
from ..send_base import SendBase, Wire, log_retry, nothing_was_sent, transport_failure

__all__ = ["AsyncHTTP", "AsyncHTTPClient"]

T = TypeVar("T")
_Client = TypeVar("_Client", bound="AsyncHTTPClient")


class AsyncHTTP(SendBase):
    """Sends over one pooled ``httpx.AsyncClient``: a call, its answer
    decoded, and the retry policy asked after each failure."""

    def __init__(
        self,
        settings: HttpSettings,
        policy: RetryPolicy,
        wire: Wire,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        super().__init__(settings, policy, wire)
        self.sleep = sleep
        self.pool = AsyncPool(settings)

    async def send(self, call: Call) -> Any:
        """Send ``call`` (again, as the retry policy says): its answer's value."""
        state = self.policy.start(idempotent=call.idempotent)
        while True:
            try:
                response = await self.pool.send(self._request(call))
            except httpx.TransportError as exc:
                delay = state.after_transport_error(nothing_sent=nothing_was_sent(exc))
                if delay is None:
                    raise transport_failure(call, self.settings, exc) from exc
                why: object = exc
            else:
                try:
                    return self._decode(call, response)
                except CollimateError as err:
                    delay = state.after_error(err)
                    if delay is None:
                        raise
                    why = err
            log_retry(call, why, delay, state.attempt, self.policy.retries)
            await self.sleep(delay)

    async def observed(
        self, run: Callable[[], Awaitable[T]], *, target: str, one_shot: bool, request: Any
    ) -> T:
        """``run()`` wrapped in the exec observer hooks."""
        observation = self._observe(target=target, one_shot=one_shot, request=request)
        if observation is None:
            return await run()
        try:
            result = await run()
        except BaseException as exc:
            observation.failed(exc)
            raise
        observation.succeeded(result)
        return result

    async def aclose(self) -> None:
        """Close the pooled connections."""
        await self.pool.aclose()


class AsyncHTTPClient:
    """What the daemon and the gateway clients share over their ``_http``
    (the send loop): the ``async with`` that closes them, a call
    sent, an exec sent inside the exec observer hooks, and :meth:`exec_once`
    (each wire's own step is its ``_exec_once``)."""

    _http: AsyncHTTP
    timeout: float

    if TYPE_CHECKING:

        async def aclose(self) -> None: ...

        async def _exec_once(
            self, template_id: str, body: dict[str, Any], egress: Mapping[str, Any] | None
        ) -> dict[str, Any]:
            """Run ``body`` once in a fresh clone of ``template_id``: the wire's way."""

    async def __aenter__(self: _Client) -> _Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _send(self, call: Call) -> Any:
        return await self._http.send(call)

    async def _answer(self, call: Call) -> dict[str, Any]:
        """The answer to ``call``, a JSON object."""
        result: dict[str, Any] = await self._send(call)
        return result

    async def _exec(self, call: Call, *, target: str, one_shot: bool) -> dict[str, Any]:
        """The answer to the exec ``call``, sent inside the exec observer hooks."""
        result: dict[str, Any] = await self._http.observed(
            lambda: self._send(call), target=target, one_shot=one_shot, request=call.body
        )
        return result

    async def exec_once(
        self,
        template_id: str,
        *,
        command: str | None = None,
        code: str | None = None,
        commands: Argvs | None = None,
        files: Files | None = None,
        timeout_seconds: int = DEFAULT_EXEC_TIMEOUT_S,
        seed: str | None = None,
        egress: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Run once in a fresh clone of ``template_id``, discarded after: the
        ExecResponse. The daemon forks, runs and discards the clone in one
        request; the gateway creates a sandbox, execs in it and deletes it,
        the delete on every path (it survives the cancellation of an
        awaiting task)."""
        body = build_exec_request(
            command=command,
            code=code,
            commands=commands,
            files=files,
            timeout_seconds=timeout_seconds,
            seed=seed,
        )
        return await self._exec_once(template_id, body, egress)
