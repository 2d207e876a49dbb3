"""The gateway client ``AsyncGatewayClient``.

One of a pair of twins: the async module is written by hand, its blocking
twin generated from it by ``tools/unasync.py`` (edit the async one, then
``hatch run lint:unasync``). The public module is ``collimate_rl.gateway``
(which says what the client covers); what both twins share is
``collimate_rl._transport.gateway_base`` and the routes,
``collimate_rl._transport.gateway_calls``.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._aio import uncancellable
from .._transport import daemon as daemon_routes
from .._transport import gateway_calls as routes
from .._transport.calls import Argvs, Files, exec_once_request
from .._transport.gateway_base import GatewayClientBase, flow, log
from .._transport.send._async import AsyncHTTP, AsyncHTTPClient
from ..tunnel import PortForward, forward_with
from ..wire import DEFAULT_EXEC_TIMEOUT_S, build_exec_request

if TYPE_CHECKING:
    from ..gateway_flows._async.envs import AsyncEnv
    from ..gateway_flows._async.sessions import AsyncSession

__all__ = ["AsyncGatewayClient"]


class AsyncGatewayClient(GatewayClientBase, AsyncHTTPClient):
    """Client of the managed gateway.

    ``AsyncGatewayClient()`` reads ``$COLLIMATE_API_KEY`` (and
    ``$COLLIMATE_BASE_URL``); every call but :meth:`health` carries the key.
    """

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        timeout: float = 120.0,
        retries: int = 3,
        backoff: float = 0.15,
        retry_budget: float = 30.0,
        rng: random.Random | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        httpx_transport: Any = None,
    ) -> None:
        self._configure(
            api_key, base_url, timeout, retries, backoff, retry_budget, rng, httpx_transport
        )
        self._http = AsyncHTTP(self._settings, self._policy, "gateway", sleep or asyncio.sleep)

    async def aclose(self) -> None:
        """Close pooled connections (the client reconnects if used again)."""
        await self._http.aclose()

    async def health(self) -> dict[str, Any]:
        """The gateway's health (the one call that carries no key)."""
        return await self._answer(routes.health())

    async def images(self) -> list[dict[str, Any]]:
        """The ready-to-run image catalog: ``[{id, name, image, visibility,
        tier, description}]``; a catalog id goes straight into
        :meth:`create_sandbox`."""
        return routes.images_of(await self._send(routes.images()))

    #: The same as :meth:`images`.
    list_images = images

    async def create_template(
        self,
        *,
        name: str,
        image: str,
        ready: Any = None,
        width: int,
        cold_fraction: float = 0,
        expected_width: int | None = None,
    ) -> dict[str, Any]:
        """Bake ``image`` into a template (pro/ent): ``{id, name, image,
        phase, bake_mode}``. Idempotent: the same request names the same id."""
        return await self._answer(
            routes.create_template(name, image, ready, width, cold_fraction, expected_width)
        )

    async def get_template(self, template_id: str) -> dict[str, Any]:
        """A template: ``{id, name, image, phase, bake_mode, ...}``."""
        return await self._answer(routes.get_template(template_id))

    async def list_templates(self) -> list[dict[str, Any]]:
        """The templates of this key's tenant."""
        return list((await self._send(routes.list_templates())).get("templates") or [])

    async def delete_template(self, template_id: str) -> dict[str, Any]:
        """``{deleted, id}``; an already-missing template is not an error."""
        return await self._answer(routes.delete_template(template_id))

    async def expect_width(self, template_id: str, width: int) -> dict[str, Any]:
        """Declare how wide the next session is (clamped to the plan)."""
        return await self._answer(routes.expect(template_id, width))

    async def release_template(self, template_id: str) -> dict[str, Any]:
        """End the session: capacity relaxes to baseline now."""
        return await self._answer(routes.release(template_id))

    async def create_sandbox(
        self,
        template: str,
        *,
        label: str | None = None,
        labels: Mapping[str, str] | None = None,
        egress: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A sandbox of ``template`` (a template or catalog id): ``{id, endpoints?}``."""
        return await self._answer(routes.create_sandbox(template, label, labels, egress))

    async def list_sandboxes(self) -> list[dict[str, Any]]:
        """The live sandboxes of this key's tenant."""
        return list((await self._send(routes.list_sandboxes())).get("sandboxes") or [])

    async def get_sandbox(self, sandbox_id: str) -> dict[str, Any]:
        """A sandbox: ``{id, template, state, ...}``."""
        return await self._answer(routes.get_sandbox(sandbox_id))

    async def delete_sandbox(self, sandbox_id: str) -> dict[str, Any]:
        """``{deleted, id}``; an already-missing sandbox is not an error."""
        return await self._answer(routes.delete_sandbox(sandbox_id))

    async def exec(
        self,
        sandbox_id: str,
        *,
        command: str | None = None,
        code: str | None = None,
        commands: Argvs | None = None,
        files: Files | None = None,
        timeout_seconds: int = DEFAULT_EXEC_TIMEOUT_S,
        seed: str | None = None,
    ) -> dict[str, Any]:
        """Run in a live sandbox: the ExecResponse (merged ``stdout``,
        ``exit_code``, ``seed``, timings)."""
        body = build_exec_request(
            command=command,
            code=code,
            commands=commands,
            files=files,
            timeout_seconds=timeout_seconds,
            seed=seed,
        )
        call = routes.exec_in(sandbox_id, body, self.timeout)
        return await self._exec(call, target=sandbox_id, one_shot=False)

    async def fork(self, sandbox_id: str, *, count: int = 1, labels: Any = None) -> dict[str, Any]:
        """Live copy-on-write children: ``{parent, children: [{id, endpoints?}]}``."""
        return await self._answer(routes.fork(sandbox_id, count, labels))

    async def suspend(self, sandbox_id: str) -> dict[str, Any]:
        """Freeze a sandbox (it keeps its state, not its slot)."""
        return await self._answer(routes.state_change(sandbox_id, "suspend"))

    async def resume(self, sandbox_id: str) -> dict[str, Any]:
        """Thaw a suspended sandbox."""
        return await self._answer(routes.state_change(sandbox_id, "resume"))

    async def connect_url(
        self, sandbox_id: str, port: int, *, ttl_seconds: int = 600, protocol: str = "tcp"
    ) -> dict[str, Any]:
        """A short-lived URL to reach guest ``port`` of a sandbox from this
        machine: ``{url, expires_at}``. The ``ws://`` / ``wss://`` url carries
        a token bound to that sandbox and port; ``protocol="tcp"`` tunnels raw
        bytes, ``"cdp"`` whole DevTools messages (see :meth:`cdp_url`).
        ``ttl_seconds`` is clamped to one hour. A below-pro key is refused
        (403), an unknown sandbox is 404, a port the sandbox does not expose
        409 ``port_not_exposed``."""
        answer: dict[str, Any] = await self._send(
            routes.connect_url(sandbox_id, port, ttl_seconds, protocol)
        )
        return answer

    async def cdp_url(self, sandbox_id: str, *, ttl_seconds: int = 600) -> str:
        """The connect URL of the sandbox's Chrome DevTools port (9222), minted
        in ``cdp`` mode: what ``playwright``'s ``connect_over_cdp`` takes."""
        answer = await self.connect_url(
            sandbox_id, routes.CDP_PORT, ttl_seconds=ttl_seconds, protocol="cdp"
        )
        return routes.minted_url(answer)

    async def port_forward(
        self,
        sandbox_id: str,
        port: int,
        *,
        local_port: int = 0,
        local_host: str = "127.0.0.1",
        ttl_seconds: int = 3600,
    ) -> PortForward:
        """Guest ``port`` of a sandbox on a loopback port of this machine: a
        started :class:`~collimate_rl.PortForward` (close it, or use it as a
        context manager). One URL is minted now, so a refusal (tier, unknown
        sandbox, unexposed port) raises here rather than on first use."""
        first = routes.minted_url(await self.connect_url(sandbox_id, port, ttl_seconds=ttl_seconds))
        return forward_with(
            self._settings,
            self._policy,
            sandbox_id,
            port,
            first_url=first,
            local_host=local_host,
            local_port=local_port,
            ttl_seconds=ttl_seconds,
        )

    async def judge(
        self,
        problems: Sequence[Mapping[str, Any]],
        candidates: Sequence[Mapping[str, Any]],
    ) -> dict[str, Any]:
        """Programs judged like a contest (``POST /v1/judge``, with this
        client's key), as :meth:`AsyncCollimateClient.judge
        <collimate_rl.AsyncCollimateClient.judge>` describes: the local
        backend's gateway wire serves it; a gateway that does not answers
        404 (a :class:`~collimate_rl.CollimateError`, never a reward)."""
        return await self._answer(daemon_routes.judge(problems, candidates, self.timeout))

    async def usage(
        self, *, from_ts: str | None = None, to_ts: str | None = None
    ) -> dict[str, Any]:
        """Metered usage between two RFC3339 bounds (default: the last 30 days)."""
        return await self._answer(routes.usage(from_ts, to_ts))

    def env(
        self, ref: str, *, width: int | None = None, name: str | None = None, **kwargs: Any
    ) -> AsyncEnv:
        """An environment with the session width declared (``async with`` releases it);
        see :class:`~collimate_rl.AsyncEnv`."""
        env: AsyncEnv = flow("AsyncEnv")(self, ref, width=width, name=name, **kwargs)
        return env

    def session(self, template: Any, **kwargs: Any) -> AsyncSession:
        """A :class:`~collimate_rl.AsyncSession` on ``template`` (an id or a
        handle), opened by its ``async with`` block."""
        session: AsyncSession = flow("AsyncSession")(self, template, **kwargs)
        return session

    async def create_session(
        self, template_id: str, *, egress: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """:meth:`create_sandbox`, answered with the daemon's keys too
        (``session_id``, ``template_id``)."""
        return routes.as_session(await self.create_sandbox(template_id, egress=egress), template_id)

    #: :meth:`exec` under the daemon's name.
    session_exec = exec

    async def get_session(self, session_id: str) -> dict[str, Any]:
        """:meth:`get_sandbox`, answered with the daemon's keys too."""
        return routes.as_session(await self.get_sandbox(session_id))

    async def list_sessions(self) -> list[dict[str, Any]]:
        """:meth:`list_sandboxes`, answered with the daemon's keys too."""
        return [routes.as_session(sb) for sb in await self.list_sandboxes()]

    async def delete_session(self, session_id: str) -> dict[str, Any]:
        """:meth:`delete_sandbox`, answered as the daemon's ``{deleted, session_id}``."""
        return routes.deleted_session(await self.delete_sandbox(session_id), session_id)

    async def _exec_once(
        self, template_id: str, body: dict[str, Any], egress: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        """:meth:`exec_once` on the gateway: create -> exec -> delete; the
        delete happens on every path (and survives the cancellation of an
        awaiting task)."""

        async def run() -> dict[str, Any]:
            sandbox = await self._send(routes.create_sandbox(template_id, None, None, egress))
            sandbox_id = routes.created_id(sandbox)
            try:
                return await self._answer(routes.exec_in(sandbox_id, body, self.timeout))
            finally:
                await uncancellable(self._reap(sandbox_id))

        observed = exec_once_request(template_id, body, egress)
        return await self._http.observed(run, target=template_id, one_shot=True, request=observed)

    async def _reap(self, sandbox_id: str) -> None:
        """Delete a one-shot sandbox. A failed delete is logged, never raised:
        it must not mask the exec's own outcome (the gateway's idle reaper
        is the backstop)."""
        try:
            await self._send(routes.delete_sandbox(sandbox_id))
        except Exception as exc:
            log.warning("could not delete one-shot sandbox %s: %s", sandbox_id, exc)
