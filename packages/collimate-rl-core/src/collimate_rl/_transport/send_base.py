"""What the two send loops share: building a request, decoding an answer,
the exec observer, which transport failures prove nothing was sent, and the
retry log line. ``AsyncHTTP`` is written in ``collimate_rl/_transport/send/_async.py``,
``SyncHTTP`` generated from it; the public (internal) module is
``collimate_rl._transport.send``.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Literal
from urllib.parse import urlencode

import httpx

from ..errors import CollimateError
from ..retry import RetryPolicy
from .calls import Call, decode_answer
from .observe import ExecObservation
from .pool import HttpSettings

__all__ = ["SendBase", "Wire", "log", "log_retry", "nothing_was_sent", "transport_failure"]

log = logging.getLogger("collimate_rl.transport")

Wire = Literal["daemon", "gateway"]

#: Transport failures that prove the request never left this process: no
#: connection was made (refused, no such socket, unreachable) or no pooled
#: connection was free. Anything else (a read timeout, a reset, a half-read
#: answer) may have reached the server, so a non-idempotent POST is not sent
#: again after it.
_NOTHING_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def nothing_was_sent(exc: httpx.TransportError) -> bool:
    return isinstance(exc, _NOTHING_SENT)


def transport_failure(
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


def log_retry(call: Call, why: object, delay: float, attempt: int, retries: int) -> None:
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


class SendBase:
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
