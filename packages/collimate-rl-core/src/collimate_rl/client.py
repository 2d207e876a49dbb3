"""Clients of the node-local daemon wire (docs/wire.md §2): no auth, TCP or a unix socket.

:class:`CollimateClient` blocks; :class:`AsyncCollimateClient` is its
coroutine twin with the same methods. Both describe each route once (the
``_calls`` functions below) and differ only in how they send it, so the
retry policy, the exec timeout sizing and the observer hooks are the same.

A client pools keep-alive connections, is a context manager, and can be
pickled into a Ray / multiprocessing worker or used after ``os.fork``: the
connection pool is process-local and re-created lazily where it is used.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from .__about__ import __version__
from ._transport.calls import Call, delete, exec_call, get, post
from ._transport.calls import segment as _seg
from ._transport.pool import HttpSettings
from ._transport.send import AsyncHTTP, SyncHTTP
from .errors import CollimateError
from .retry import RetryPolicy
from .wire import DEFAULT_EXEC_TIMEOUT_S, build_exec_request

__all__ = [
    "DEFAULT_BASE_URL",
    "SESSION_SOCKET",
    "AsyncCollimateClient",
    "CollimateClient",
]

#: Where a node-local daemon listens by default.
DEFAULT_BASE_URL = "http://127.0.0.1:8080"
#: The in-pod SESSION socket (the ADMIN socket ``/run/collimate/serve.sock``
#: is for node agents, never for workloads).
SESSION_SOCKET = "/run/collimate-session/serve.sock"

_USER_AGENT = f"collimate-rl/{__version__}"

_IMAGES_ON_DAEMON = (
    "the image catalog is a gateway feature: a node-local daemon serves only the "
    "templates it was started with (see templates()). To browse the catalog, use "
    "GatewayClient(api_key='col_...') or connect(api_key='col_...') "
    "(or set COLLIMATE_API_KEY and call connect())."
)

_C = TypeVar("_C", bound="_DaemonClientBase")

Files = Sequence[Mapping[str, str]]
Argvs = Sequence[Sequence[str]]


# --- the daemon routes, described once -------------------------------------


def _health() -> Call:
    return get("/v1/health")


def _list_sessions() -> Call:
    return get("/v1/sessions")


def _create_session(
    template_id: str, egress: Mapping[str, Any] | None, env: Mapping[str, str] | None = None
) -> Call:
    body: dict[str, Any] = {"template_id": template_id}
    if egress is not None:
        body["egress"] = dict(egress)
    if env:
        body["env"] = dict(env) if isinstance(env, Mapping) else env  # the server checks it
    return post("/v1/sessions", body, idempotent=False)


def _get_session(session_id: str) -> Call:
    return get(f"/v1/sessions/{_seg(session_id)}")


def _delete_session(session_id: str) -> Call:
    return delete(
        f"/v1/sessions/{_seg(session_id)}",
        if_missing={"deleted": False, "session_id": session_id},
    )


# --- shared configuration ---------------------------------------------------


class _DaemonClientBase:
    """Configuration and constructors shared by the sync and async clients."""

    _wire_name = "daemon"

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        timeout: float = 120.0,
        retries: int = 3,
        backoff: float = 0.15,
        retry_budget: float = 30.0,
        unix_socket: str | None = None,
        *,
        rng: random.Random | None = None,
        httpx_transport: Any = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = float(timeout)
        self.retries = retries
        self.backoff = backoff
        self.retry_budget = retry_budget
        self.unix_socket = os.fspath(unix_socket) if unix_socket is not None else None
        self._settings = HttpSettings(
            base_url=self.base_url,
            timeout=self.timeout,
            unix_socket=self.unix_socket,
            headers={"User-Agent": _USER_AGENT},
            httpx_transport=httpx_transport,
        )
        self._policy = RetryPolicy(
            retries=retries, backoff=backoff, retry_budget=retry_budget, rng=rng or random.Random()
        )

    @property
    def endpoint(self) -> str:
        """The server this client talks to (URL, or ``unix:<path>``)."""
        return self._settings.endpoint

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.endpoint!r})"

    @classmethod
    def for_node_socket(cls: type[_C], path: str = SESSION_SOCKET, **kwargs: Any) -> _C:
        """A client of the in-pod daemon over its SESSION unix socket."""
        return cls(unix_socket=path, **kwargs)

    @classmethod
    def from_env(cls: type[_C], **kwargs: Any) -> _C:
        """A daemon client from the environment: ``$COLLIMATE_SERVE_SOCKET``,
        else ``$COLLIMATE_SERVE_URL``, else the SESSION socket when it
        exists, else ``http://127.0.0.1:8080``. Keyword arguments win."""
        if "unix_socket" not in kwargs and "base_url" not in kwargs:
            sock = os.environ.get("COLLIMATE_SERVE_SOCKET")
            url = os.environ.get("COLLIMATE_SERVE_URL")
            if sock:
                kwargs["unix_socket"] = sock
            elif url:
                kwargs["base_url"] = url
            elif os.path.exists(SESSION_SOCKET):
                kwargs["unix_socket"] = SESSION_SOCKET
        return cls(**kwargs)

    def _exec_body(
        self,
        *,
        template_id: str | None = None,
        command: str | None,
        code: str | None,
        commands: Argvs | None,
        files: Files | None,
        timeout_seconds: int,
        seed: str | None,
        egress: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        return build_exec_request(
            template_id=template_id,
            command=command,
            code=code,
            commands=commands,
            files=files,
            timeout_seconds=timeout_seconds,
            seed=seed,
            egress=egress,
        )


class CollimateClient(_DaemonClientBase):
    """Blocking client of a node-local ``serve`` daemon.

    ``CollimateClient("http://127.0.0.1:8080")`` over TCP, or
    ``CollimateClient(unix_socket=path)`` / :meth:`for_node_socket` over a
    unix socket. ``rng`` and ``sleep`` make the retry backoff replayable in
    tests; ``httpx_transport`` swaps the network (``httpx.MockTransport``).
    """

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        timeout: float = 120.0,
        retries: int = 3,
        backoff: float = 0.15,
        retry_budget: float = 30.0,
        unix_socket: str | None = None,
        *,
        rng: random.Random | None = None,
        sleep: Callable[[float], None] | None = None,
        httpx_transport: Any = None,
    ) -> None:
        super().__init__(
            base_url,
            timeout,
            retries,
            backoff,
            retry_budget,
            unix_socket,
            rng=rng,
            httpx_transport=httpx_transport,
        )
        self._http = SyncHTTP(self._settings, self._policy, "daemon", sleep or time.sleep)

    # lifecycle
    def close(self) -> None:
        """Close pooled connections (the client reconnects if used again)."""
        self._http.close()

    def __enter__(self) -> CollimateClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # discovery
    def health(self) -> dict[str, Any]:
        """``{status, sessions, running, max_inflight, queued, templates, version}``."""
        result: dict[str, Any] = self._http.send(_health())
        return result

    def templates(self) -> list[str]:
        """Ids of the templates this daemon serves."""
        return list(self.health().get("templates") or [])

    def images(self) -> list[dict[str, Any]]:
        """Always raises: the image catalog lives on the gateway."""
        raise CollimateError(_IMAGES_ON_DAEMON, None, "gateway_only")

    def list_images(self) -> list[dict[str, Any]]:
        """Always raises: the image catalog lives on the gateway."""
        return self.images()

    # sessions
    def list_sessions(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._http.send(_list_sessions())
        return result

    def create_session(
        self,
        template_id: str,
        *,
        egress: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Fork a live clone of ``template_id``: ``{session_id, template_id,
        fork_time_ms, create_time_ms, endpoints?}``. ``env`` (an app
        template's server, when it starts for this session) is answered
        with the names set, ``env``; a server that cannot set them refuses."""
        result: dict[str, Any] = self._http.send(_create_session(template_id, egress, env))
        return result

    def get_session(self, session_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._http.send(_get_session(session_id))
        return result

    def delete_session(self, session_id: str) -> dict[str, Any]:
        """``{deleted, session_id}``; never raises because it was already gone."""
        result: dict[str, Any] = self._http.send(_delete_session(session_id))
        return result

    # execs
    def session_exec(
        self,
        session_id: str,
        *,
        command: str | None = None,
        code: str | None = None,
        commands: Argvs | None = None,
        files: Files | None = None,
        timeout_seconds: int = DEFAULT_EXEC_TIMEOUT_S,
        seed: str | None = None,
    ) -> dict[str, Any]:
        """Run in a live session: the ExecResponse (merged ``stdout``,
        ``exit_code``, ``seed``, timings)."""
        body = self._exec_body(
            command=command,
            code=code,
            commands=commands,
            files=files,
            timeout_seconds=timeout_seconds,
            seed=seed,
        )
        call = exec_call(f"/v1/sessions/{_seg(session_id)}/exec", body, self.timeout)
        result: dict[str, Any] = self._http.observed(
            lambda: self._http.send(call), target=session_id, one_shot=False, request=body
        )
        return result

    def exec_once(
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
        """Run once in an ephemeral clone of ``template_id`` (forked, run,
        discarded by the daemon in one request)."""
        body = self._exec_body(
            template_id=template_id,
            command=command,
            code=code,
            commands=commands,
            files=files,
            timeout_seconds=timeout_seconds,
            seed=seed,
            egress=egress,
        )
        call = exec_call("/v1/exec", body, self.timeout)
        result: dict[str, Any] = self._http.observed(
            lambda: self._http.send(call), target=template_id, one_shot=True, request=body
        )
        return result


class AsyncCollimateClient(_DaemonClientBase):
    """The coroutine twin of :class:`CollimateClient` (same methods, awaited;
    ``async with``; :meth:`aclose`)."""

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        timeout: float = 120.0,
        retries: int = 3,
        backoff: float = 0.15,
        retry_budget: float = 30.0,
        unix_socket: str | None = None,
        *,
        rng: random.Random | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        httpx_transport: Any = None,
    ) -> None:
        super().__init__(
            base_url,
            timeout,
            retries,
            backoff,
            retry_budget,
            unix_socket,
            rng=rng,
            httpx_transport=httpx_transport,
        )
        self._http = AsyncHTTP(self._settings, self._policy, "daemon", sleep or asyncio.sleep)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncCollimateClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def health(self) -> dict[str, Any]:
        result: dict[str, Any] = await self._http.send(_health())
        return result

    async def templates(self) -> list[str]:
        return list((await self.health()).get("templates") or [])

    async def images(self) -> list[dict[str, Any]]:
        raise CollimateError(_IMAGES_ON_DAEMON, None, "gateway_only")

    async def list_images(self) -> list[dict[str, Any]]:
        return await self.images()

    async def list_sessions(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = await self._http.send(_list_sessions())
        return result

    async def create_session(
        self,
        template_id: str,
        *,
        egress: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        result: dict[str, Any] = await self._http.send(_create_session(template_id, egress, env))
        return result

    async def get_session(self, session_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self._http.send(_get_session(session_id))
        return result

    async def delete_session(self, session_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self._http.send(_delete_session(session_id))
        return result

    async def session_exec(
        self,
        session_id: str,
        *,
        command: str | None = None,
        code: str | None = None,
        commands: Argvs | None = None,
        files: Files | None = None,
        timeout_seconds: int = DEFAULT_EXEC_TIMEOUT_S,
        seed: str | None = None,
    ) -> dict[str, Any]:
        body = self._exec_body(
            command=command,
            code=code,
            commands=commands,
            files=files,
            timeout_seconds=timeout_seconds,
            seed=seed,
        )
        call = exec_call(f"/v1/sessions/{_seg(session_id)}/exec", body, self.timeout)
        result: dict[str, Any] = await self._http.observed(
            lambda: self._http.send(call), target=session_id, one_shot=False, request=body
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
        body = self._exec_body(
            template_id=template_id,
            command=command,
            code=code,
            commands=commands,
            files=files,
            timeout_seconds=timeout_seconds,
            seed=seed,
            egress=egress,
        )
        call = exec_call("/v1/exec", body, self.timeout)
        result: dict[str, Any] = await self._http.observed(
            lambda: self._http.send(call), target=template_id, one_shot=True, request=body
        )
        return result
