"""The two send loops: thin, and identical but for ``await``.

Each loop sends a :class:`~.calls.Call`, turns the answer into a value or a
typed error (:func:`~.calls.decode_answer`) and asks the request's
:class:`~collimate_rl.retry.RetryState` whether to go again. All the judgement
lives in :mod:`collimate_rl.retry`; these loops only do I/O and sleep.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeVar
from urllib.parse import urlencode

import httpx

from ..errors import CollimateError
from ..retry import RetryPolicy
from .calls import Call, decode_answer
from .observe import ExecObservation
from .pool import AsyncPool, HttpSettings, SyncPool

__all__ = ["AsyncHTTP", "SyncHTTP", "nothing_was_sent"]

log = logging.getLogger("collimate_rl.transport")

T = TypeVar("T")
Wire = Literal["daemon", "gateway"]

#: Transport failures that prove the request never left this process: no
#: connection was made (refused, no such socket, unreachable) or no pooled
#: connection was free. Anything else (a read timeout, a reset, a half-read
#: answer) may have reached the server, so a non-idempotent POST is not sent
#: again after it.
_NOTHING_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def nothing_was_sent(exc: httpx.TransportError) -> bool:
    return isinstance(exc, _NOTHING_SENT)


def _transport_failure(
    call: Call, settings: HttpSettings, exc: httpx.TransportError
) -> CollimateError:
    if nothing_was_sent(exc):
        why = "could not connect"
    elif call.idempotent:
        why = "the connection failed"
    else:
        why = (
            "the connection failed after the request was sent; not retried "
            "because the server may already have acted on it"
        )
    detail = str(exc) or type(exc).__name__
    return CollimateError(
        f"{call.method} {call.path} at {settings.endpoint}: {why} ({type(exc).__name__}: {detail})",
        unsent=nothing_was_sent(exc),
    )


def _log_retry(call: Call, why: object, delay: float, attempt: int, retries: int) -> None:
    if log.isEnabledFor(logging.DEBUG):
        log.debug(
            "retrying %s %s in %.3fs (retry %d/%d) after %s",
            call.method,
            call.path,
            delay,
            attempt,
            retries,
            why if isinstance(why, CollimateError) else f"{type(why).__name__}: {why}",
        )


class _Base:
    def __init__(self, settings: HttpSettings, policy: RetryPolicy, wire: Wire) -> None:
        self.settings = settings
        self.policy = policy
        self.wire: Wire = wire
        base = {"Accept": "application/json", **settings.headers}
        self._plain_headers = base
        self._auth_headers = {**base, **settings.auth_headers}
        self._json_headers = {**base, "Content-Type": "application/json"}
        self._json_auth_headers = {**self._auth_headers, "Content-Type": "application/json"}

    def _request(self, call: Call) -> httpx.Request:
        """The complete request, built once per attempt (cheap: no URL merging)."""
        url = self.settings.base_url + call.path
        if call.params:
            url += "?" + urlencode(call.params)
        if call.body is None:
            content = None
            headers = self._auth_headers if call.auth else self._plain_headers
        else:
            content = json.dumps(call.body, separators=(",", ":"), ensure_ascii=False).encode()
            headers = self._json_auth_headers if call.auth else self._json_headers
        return httpx.Request(
            call.method,
            url,
            content=content,
            headers=headers,
            extensions={"timeout": self.settings.timeout_for(call.read_timeout)},
        )

    def _decode(self, call: Call, response: httpx.Response) -> Any:
        return decode_answer(
            call, response.status_code, response.content, gateway=self.wire == "gateway"
        )

    def _observe(self, *, target: str, one_shot: bool, request: Any) -> ExecObservation | None:
        return ExecObservation.start(
            wire=self.wire,
            endpoint=self.settings.endpoint,
            target=target,
            one_shot=one_shot,
            request=request,
        )


class SyncHTTP(_Base):
    """Blocking sends over one pooled ``httpx.Client``."""

    def __init__(
        self,
        settings: HttpSettings,
        policy: RetryPolicy,
        wire: Wire,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(settings, policy, wire)
        self.sleep = sleep
        self.pool = SyncPool(settings)

    def send(self, call: Call) -> Any:
        state = self.policy.start(idempotent=call.idempotent)
        while True:
            try:
                response = self.pool.send(self._request(call))
            except httpx.TransportError as exc:
                delay = state.after_transport_error(nothing_sent=nothing_was_sent(exc))
                if delay is None:
                    raise _transport_failure(call, self.settings, exc) from exc
                why: object = exc
            else:
                try:
                    return self._decode(call, response)
                except CollimateError as err:
                    delay = state.after_error(err)
                    if delay is None:
                        raise
                    why = err
            _log_retry(call, why, delay, state.attempt, self.policy.retries)
            self.sleep(delay)

    def observed(self, run: Callable[[], T], *, target: str, one_shot: bool, request: Any) -> T:
        """``run()`` wrapped in the exec observer hooks."""
        observation = self._observe(target=target, one_shot=one_shot, request=request)
        if observation is None:
            return run()
        try:
            result = run()
        except BaseException as exc:
            observation.failed(exc)
            raise
        observation.succeeded(result)
        return result

    def close(self) -> None:
        self.pool.close()


class AsyncHTTP(_Base):
    """The same loop, awaiting, over one pooled ``httpx.AsyncClient``."""

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
        state = self.policy.start(idempotent=call.idempotent)
        while True:
            try:
                response = await self.pool.send(self._request(call))
            except httpx.TransportError as exc:
                delay = state.after_transport_error(nothing_sent=nothing_was_sent(exc))
                if delay is None:
                    raise _transport_failure(call, self.settings, exc) from exc
                why: object = exc
            else:
                try:
                    return self._decode(call, response)
                except CollimateError as err:
                    delay = state.after_error(err)
                    if delay is None:
                        raise
                    why = err
            _log_retry(call, why, delay, state.attempt, self.policy.retries)
            await self.sleep(delay)

    async def observed(
        self, run: Callable[[], Awaitable[T]], *, target: str, one_shot: bool, request: Any
    ) -> T:
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
        await self.pool.aclose()
