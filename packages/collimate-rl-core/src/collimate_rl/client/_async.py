"""The daemon client ``AsyncCollimateClient``.

One of a pair of twins: the async module is written by hand, its blocking
twin generated from it by ``tools/unasync.py`` (edit the async one, then
``hatch run lint:unasync``). The public module is ``collimate_rl.client``;
the routes and the configuration both share are ``collimate_rl._transport.daemon``.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from .._transport import daemon as routes
from .._transport.calls import Argvs, Files
from .._transport.daemon import DEFAULT_BASE_URL, DaemonClientBase
from .._transport.send._async import AsyncHTTP, AsyncHTTPClient
from ..errors import CollimateError
from ..wire import DEFAULT_EXEC_TIMEOUT_S, build_exec_request

__all__ = ["AsyncCollimateClient"]


class AsyncCollimateClient(DaemonClientBase, AsyncHTTPClient):
    """Client of a node-local ``serve`` daemon.

    ``AsyncCollimateClient("http://127.0.0.1:8080")`` over TCP, or
    ``AsyncCollimateClient(unix_socket=path)`` / :meth:`for_node_socket` over
    a unix socket; a context manager (``async with``), whose pooled
    connections :meth:`aclose` closes. ``rng`` and ``sleep`` make the retry
    backoff replayable in tests; ``httpx_transport`` swaps the network
    (``httpx.MockTransport``); ``headers`` go with every request (a
    cluster's grader wants its secret there: ``X-Collimate-Cluster-Secret``).
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
        sleep: Callable[[float], Awaitable[None]] | None = None,
        httpx_transport: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._configure(
            base_url,
            timeout,
            retries,
            backoff,
            retry_budget,
            unix_socket,
            rng,
            httpx_transport,
            headers,
        )
        self._http = AsyncHTTP(self._settings, self._policy, "daemon", sleep or asyncio.sleep)

    # lifecycle
    async def aclose(self) -> None:
        """Close pooled connections (the client reconnects if used again)."""
        await self._http.aclose()

    # discovery
    async def health(self) -> dict[str, Any]:
        """``{status, sessions, running, max_inflight, queued, templates, version}``."""
        return await self._answer(routes.health())

    async def templates(self) -> list[str]:
        """Ids of the templates this daemon serves."""
        return list((await self.health()).get("templates") or [])

    async def images(self) -> list[dict[str, Any]]:
        """Always raises: the image catalog lives on the gateway."""
        raise CollimateError(routes.IMAGES_ON_DAEMON, None, "gateway_only")

    #: :meth:`images` under the gateway's other name (it always raises:
    #: the image catalog lives on the gateway).
    list_images = images

    # sessions
    async def list_sessions(self) -> list[dict[str, Any]]:
        """The live sessions of this daemon."""
        result: list[dict[str, Any]] = await self._http.send(routes.list_sessions())
        return result

    async def create_session(
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
        call = routes.create_session(template_id, egress, env)
        return await self._answer(call)

    async def get_session(self, session_id: str) -> dict[str, Any]:
        """One session, as :meth:`create_session` answered it."""
        return await self._answer(routes.get_session(session_id))

    async def delete_session(self, session_id: str) -> dict[str, Any]:
        """``{deleted, session_id}``; never raises because it was already gone."""
        return await self._answer(routes.delete_session(session_id))

    # judging
    async def judge(
        self,
        problems: Sequence[Mapping[str, Any]],
        candidates: Sequence[Mapping[str, Any]],
    ) -> dict[str, Any]:
        """Programs judged like a contest by the server (``POST /v1/judge``):
        ``problems`` (``language``, ``tests`` of ``{input, output}``,
        ``time_limit`` in CPU seconds, ``memory_limit_mb``, ``compare``,
        ``checker``, ``scoring``), ``candidates`` (``{problem, source}``).
        Answers one result per candidate (``reward``, ``verdict``, per-test
        ``tests``, ``compile``; or ``infra_error``) and the server's
        ``compile_cache`` counters. :class:`~collimate_rl.ContestReward`
        is how ``grade`` sends it."""
        call = routes.judge(problems, candidates, self.timeout)
        return await self._answer(call)

    # execs
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
        """Run in a live session: the ExecResponse (merged ``stdout``,
        ``exit_code``, ``seed``, timings)."""
        body = build_exec_request(
            command=command,
            code=code,
            commands=commands,
            files=files,
            timeout_seconds=timeout_seconds,
            seed=seed,
        )
        call = routes.session_exec(session_id, body, self.timeout)
        return await self._exec(call, target=session_id, one_shot=False)

    async def _exec_once(
        self, template_id: str, body: dict[str, Any], egress: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        """:meth:`exec_once` on the daemon: forked, run and discarded in one request."""
        call = routes.exec_once(template_id, body, egress, self.timeout)
        return await self._exec(call, target=template_id, one_shot=True)
