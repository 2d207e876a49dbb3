"""Clients of the managed gateway wire (docs/wire.md §3): Bearer ``col_*`` keys.

:class:`GatewayClient` covers the whole gateway surface (catalog, templates,
sandboxes, forks, usage) and also implements the daemon client's session
surface 1:1 (``create_session`` / ``session_exec`` / ``exec_once`` /
``get_session`` / ``list_sessions`` / ``delete_session``), so everything built
on a client runs on either wire unchanged. :class:`AsyncGatewayClient` is its
coroutine twin.

The gateway has no one-shot exec: :meth:`GatewayClient.exec_once` composes
create -> exec -> delete, and the delete runs on every path (exec failure,
``KeyboardInterrupt``, task cancellation), because a leaked sandbox keeps
holding one of the tier's concurrency slots.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .__about__ import __version__
from ._aio import uncancellable
from ._transport import gateway_calls as routes
from ._transport.calls import Call, exec_call
from ._transport.calls import segment as _seg
from ._transport.pool import HttpSettings
from ._transport.send import AsyncHTTP, SyncHTTP
from .retry import RetryPolicy
from .wire import DEFAULT_EXEC_TIMEOUT_S, build_exec_request

if TYPE_CHECKING:
    from .gateway_flows.envs import AsyncEnv, Env
    from .gateway_flows.sessions import AsyncSession, Session

__all__ = ["DEFAULT_GATEWAY_URL", "AsyncGatewayClient", "GatewayClient"]

log = logging.getLogger("collimate_rl.gateway")

DEFAULT_GATEWAY_URL = "https://api.collimate.ai"
_KEY_RE = re.compile(r"^col_(demo|pro|ent)_\S+$")
_USER_AGENT = f"collimate-rl/{__version__}"

_G = TypeVar("_G", bound="_GatewayClientBase")

Files = Sequence[Mapping[str, str]]
Argvs = Sequence[Sequence[str]]


def _resolve_key(api_key: str | None) -> str:
    key = api_key if api_key is not None else os.environ.get("COLLIMATE_API_KEY")
    if not key:
        raise ValueError(
            "the gateway needs an API key: pass api_key='col_<tier>_...' or set "
            "COLLIMATE_API_KEY (for a node-local daemon use CollimateClient instead)"
        )
    key = key.strip()
    if not _KEY_RE.match(key):
        shown = key[:8] + "..." if len(key) > 8 else key
        raise ValueError(
            f"not a Collimate API key ({shown!r}): keys look like col_<tier>_<secret> "
            "with tier demo, pro or ent"
        )
    return key


# --- the flows, registered from the layer above ------------------------------

#: The classes :meth:`GatewayClient.env` / :meth:`GatewayClient.session` (and
#: their async twins) build, by name: ``Env``, ``AsyncEnv``, ``Session``,
#: ``AsyncSession``. The flows (:mod:`collimate_rl.gateway_flows`) are a layer
#: above these clients and build on them, so they register their classes here
#: when they are imported (:func:`register_flows`) rather than being imported
#: from here; ``import collimate_rl``, which importing this module implies,
#: imports them before any client exists.
_FLOWS: dict[str, Callable[..., Any]] = {}


def register_flows(**classes: Callable[..., Any]) -> None:
    """Called by :mod:`collimate_rl.gateway_flows` with its classes, by name."""
    _FLOWS.update(classes)


def _flow(name: str) -> Callable[..., Any]:
    try:
        return _FLOWS[name]
    except KeyError:
        raise RuntimeError(
            f"collimate_rl.gateway_flows has not registered {name}: import collimate_rl"
        ) from None


# --- shared configuration ---------------------------------------------------


class _GatewayClientBase:
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
        httpx_transport: Any = None,
    ) -> None:
        self._api_key = _resolve_key(api_key)
        origin = base_url or os.environ.get("COLLIMATE_BASE_URL") or DEFAULT_GATEWAY_URL
        self.base_url = origin.rstrip("/")
        self.timeout = float(timeout)
        self.retries = retries
        self.backoff = backoff
        self.retry_budget = retry_budget
        self._settings = HttpSettings(
            base_url=self.base_url,
            timeout=self.timeout,
            headers={"User-Agent": _USER_AGENT},
            auth_headers={"Authorization": f"Bearer {self._api_key}"},
            httpx_transport=httpx_transport,
            trust_env=True,  # the gateway is remote: honour HTTPS_PROXY and friends
        )
        self._policy = RetryPolicy(
            retries=retries, backoff=backoff, retry_budget=retry_budget, rng=rng or random.Random()
        )

    @property
    def tier(self) -> str:
        """``demo``, ``pro`` or ``ent``: the plan the key belongs to."""
        return self._api_key.split("_", 2)[1]

    @property
    def api_key(self) -> str:
        return self._api_key

    @property
    def endpoint(self) -> str:
        return self._settings.endpoint

    def __repr__(self) -> str:  # never shows the key
        return f"{type(self).__name__}({self.base_url!r}, tier={self.tier!r})"

    @classmethod
    def from_env(cls: type[_G], **kwargs: Any) -> _G:
        """A client from ``$COLLIMATE_API_KEY`` and ``$COLLIMATE_BASE_URL``."""
        return cls(**kwargs)


class GatewayClient(_GatewayClientBase):
    """Blocking client of the managed gateway.

    ``GatewayClient()`` reads ``$COLLIMATE_API_KEY`` (and
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
        sleep: Callable[[float], None] | None = None,
        httpx_transport: Any = None,
    ) -> None:
        super().__init__(
            api_key,
            base_url,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            retry_budget=retry_budget,
            rng=rng,
            httpx_transport=httpx_transport,
        )
        self._http = SyncHTTP(self._settings, self._policy, "gateway", sleep or time.sleep)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> GatewayClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, call: Call) -> Any:
        return self._http.send(call)

    # catalog and health
    def health(self) -> dict[str, Any]:
        result: dict[str, Any] = self._send(routes.health())
        return result

    def images(self) -> list[dict[str, Any]]:
        """The ready-to-run image catalog: ``[{id, name, image, visibility,
        tier, description}]``; a catalog id goes straight into
        :meth:`create_sandbox`."""
        return routes.images_of(self._send(routes.images()))

    def list_images(self) -> list[dict[str, Any]]:
        return self.images()

    # templates
    def create_template(
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
        result: dict[str, Any] = self._send(
            routes.create_template(name, image, ready, width, cold_fraction, expected_width)
        )
        return result

    def get_template(self, template_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._send(routes.get_template(template_id))
        return result

    def list_templates(self) -> list[dict[str, Any]]:
        return list(self._send(routes.list_templates()).get("templates") or [])

    def delete_template(self, template_id: str) -> dict[str, Any]:
        """``{deleted, id}``; an already-missing template is not an error."""
        result: dict[str, Any] = self._send(routes.delete_template(template_id))
        return result

    def expect_width(self, template_id: str, width: int) -> dict[str, Any]:
        """Declare how wide the next session is (clamped to the plan)."""
        result: dict[str, Any] = self._send(routes.expect(template_id, width))
        return result

    def release_template(self, template_id: str) -> dict[str, Any]:
        """End the session: capacity relaxes to baseline now."""
        result: dict[str, Any] = self._send(routes.release(template_id))
        return result

    # sandboxes
    def create_sandbox(
        self,
        template: str,
        *,
        label: str | None = None,
        labels: Mapping[str, str] | None = None,
        egress: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        result: dict[str, Any] = self._send(routes.create_sandbox(template, label, labels, egress))
        return result

    def list_sandboxes(self) -> list[dict[str, Any]]:
        return list(self._send(routes.list_sandboxes()).get("sandboxes") or [])

    def get_sandbox(self, sandbox_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._send(routes.get_sandbox(sandbox_id))
        return result

    def delete_sandbox(self, sandbox_id: str) -> dict[str, Any]:
        """``{deleted, id}``; an already-missing sandbox is not an error."""
        result: dict[str, Any] = self._send(routes.delete_sandbox(sandbox_id))
        return result

    def exec(
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
        body = build_exec_request(
            command=command,
            code=code,
            commands=commands,
            files=files,
            timeout_seconds=timeout_seconds,
            seed=seed,
        )
        call = exec_call(f"/v1/sandboxes/{_seg(sandbox_id)}/exec", body, self.timeout)
        result: dict[str, Any] = self._http.observed(
            lambda: self._send(call), target=sandbox_id, one_shot=False, request=body
        )
        return result

    def fork(self, sandbox_id: str, *, count: int = 1, labels: Any = None) -> dict[str, Any]:
        """Live copy-on-write children: ``{parent, children: [{id, endpoints?}]}``."""
        result: dict[str, Any] = self._send(routes.fork(sandbox_id, count, labels))
        return result

    def suspend(self, sandbox_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._send(routes.state_change(sandbox_id, "suspend"))
        return result

    def resume(self, sandbox_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._send(routes.state_change(sandbox_id, "resume"))
        return result

    def usage(self, *, from_ts: str | None = None, to_ts: str | None = None) -> dict[str, Any]:
        """Metered usage between two RFC3339 bounds (default: the last 30 days)."""
        result: dict[str, Any] = self._send(routes.usage(from_ts, to_ts))
        return result

    # the flows (collimate_rl.gateway_flows, registered from above) build on this client
    def env(
        self, ref: str, *, width: int | None = None, name: str | None = None, **kwargs: Any
    ) -> Env:
        """An environment with the session width declared (``with`` releases it);
        see :class:`~collimate_rl.Env`."""
        env: Env = _flow("Env")(self, ref, width=width, name=name, **kwargs)
        return env

    def session(self, template: Any, **kwargs: Any) -> Session:
        """A :class:`~collimate_rl.Session` on ``template`` (an id or a
        handle), opened by its ``with`` block."""
        session: Session = _flow("Session")(self, template, **kwargs)
        return session

    # the daemon-parity session surface
    def create_session(
        self, template_id: str, *, egress: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """:meth:`create_sandbox`, answered with the daemon's keys too
        (``session_id``, ``template_id``)."""
        return routes.as_session(self.create_sandbox(template_id, egress=egress), template_id)

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
        return self.exec(
            session_id,
            command=command,
            code=code,
            commands=commands,
            files=files,
            timeout_seconds=timeout_seconds,
            seed=seed,
        )

    def get_session(self, session_id: str) -> dict[str, Any]:
        return routes.as_session(self.get_sandbox(session_id))

    def list_sessions(self) -> list[dict[str, Any]]:
        return [routes.as_session(sb) for sb in self.list_sandboxes()]

    def delete_session(self, session_id: str) -> dict[str, Any]:
        return routes.deleted_session(self.delete_sandbox(session_id), session_id)

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
        """create -> exec -> delete; the delete happens on every path."""
        body = build_exec_request(
            command=command,
            code=code,
            commands=commands,
            files=files,
            timeout_seconds=timeout_seconds,
            seed=seed,
        )

        def run() -> dict[str, Any]:
            sandbox = self._send(routes.create_sandbox(template_id, None, None, egress))
            sandbox_id = routes.created_id(sandbox)
            try:
                result: dict[str, Any] = self._send(
                    exec_call(f"/v1/sandboxes/{_seg(sandbox_id)}/exec", body, self.timeout)
                )
                return result
            finally:
                self._reap(sandbox_id)

        observed = {**body, "template_id": template_id}
        if egress is not None:
            observed["egress"] = dict(egress)
        return self._http.observed(run, target=template_id, one_shot=True, request=observed)

    def _reap(self, sandbox_id: str) -> None:
        """Delete a one-shot sandbox. A failed delete is logged, never raised:
        it must not mask the exec's own outcome (the gateway's idle reaper
        is the backstop)."""
        try:
            self._send(routes.delete_sandbox(sandbox_id))
        except Exception as exc:
            log.warning("could not delete one-shot sandbox %s: %s", sandbox_id, exc)


class AsyncGatewayClient(_GatewayClientBase):
    """The coroutine twin of :class:`GatewayClient`."""

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
        super().__init__(
            api_key,
            base_url,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            retry_budget=retry_budget,
            rng=rng,
            httpx_transport=httpx_transport,
        )
        self._http = AsyncHTTP(self._settings, self._policy, "gateway", sleep or asyncio.sleep)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncGatewayClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _send(self, call: Call) -> Any:
        return await self._http.send(call)

    async def health(self) -> dict[str, Any]:
        result: dict[str, Any] = await self._send(routes.health())
        return result

    async def images(self) -> list[dict[str, Any]]:
        return routes.images_of(await self._send(routes.images()))

    async def list_images(self) -> list[dict[str, Any]]:
        return await self.images()

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
        result: dict[str, Any] = await self._send(
            routes.create_template(name, image, ready, width, cold_fraction, expected_width)
        )
        return result

    async def get_template(self, template_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self._send(routes.get_template(template_id))
        return result

    async def list_templates(self) -> list[dict[str, Any]]:
        return list((await self._send(routes.list_templates())).get("templates") or [])

    async def delete_template(self, template_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self._send(routes.delete_template(template_id))
        return result

    async def expect_width(self, template_id: str, width: int) -> dict[str, Any]:
        result: dict[str, Any] = await self._send(routes.expect(template_id, width))
        return result

    async def release_template(self, template_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self._send(routes.release(template_id))
        return result

    async def create_sandbox(
        self,
        template: str,
        *,
        label: str | None = None,
        labels: Mapping[str, str] | None = None,
        egress: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        result: dict[str, Any] = await self._send(
            routes.create_sandbox(template, label, labels, egress)
        )
        return result

    async def list_sandboxes(self) -> list[dict[str, Any]]:
        return list((await self._send(routes.list_sandboxes())).get("sandboxes") or [])

    async def get_sandbox(self, sandbox_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self._send(routes.get_sandbox(sandbox_id))
        return result

    async def delete_sandbox(self, sandbox_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self._send(routes.delete_sandbox(sandbox_id))
        return result

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
        body = build_exec_request(
            command=command,
            code=code,
            commands=commands,
            files=files,
            timeout_seconds=timeout_seconds,
            seed=seed,
        )
        call = exec_call(f"/v1/sandboxes/{_seg(sandbox_id)}/exec", body, self.timeout)
        result: dict[str, Any] = await self._http.observed(
            lambda: self._send(call), target=sandbox_id, one_shot=False, request=body
        )
        return result

    async def fork(self, sandbox_id: str, *, count: int = 1, labels: Any = None) -> dict[str, Any]:
        result: dict[str, Any] = await self._send(routes.fork(sandbox_id, count, labels))
        return result

    async def suspend(self, sandbox_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self._send(routes.state_change(sandbox_id, "suspend"))
        return result

    async def resume(self, sandbox_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self._send(routes.state_change(sandbox_id, "resume"))
        return result

    async def usage(
        self, *, from_ts: str | None = None, to_ts: str | None = None
    ) -> dict[str, Any]:
        result: dict[str, Any] = await self._send(routes.usage(from_ts, to_ts))
        return result

    def env(
        self, ref: str, *, width: int | None = None, name: str | None = None, **kwargs: Any
    ) -> AsyncEnv:
        """An :class:`~collimate_rl.AsyncEnv`: declared when awaited or entered."""
        env: AsyncEnv = _flow("AsyncEnv")(self, ref, width=width, name=name, **kwargs)
        return env

    def session(self, template: Any, **kwargs: Any) -> AsyncSession:
        """An :class:`~collimate_rl.AsyncSession`, opened when awaited or entered."""
        session: AsyncSession = _flow("AsyncSession")(self, template, **kwargs)
        return session

    async def create_session(
        self, template_id: str, *, egress: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        return routes.as_session(await self.create_sandbox(template_id, egress=egress), template_id)

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
        return await self.exec(
            session_id,
            command=command,
            code=code,
            commands=commands,
            files=files,
            timeout_seconds=timeout_seconds,
            seed=seed,
        )

    async def get_session(self, session_id: str) -> dict[str, Any]:
        return routes.as_session(await self.get_sandbox(session_id))

    async def list_sessions(self) -> list[dict[str, Any]]:
        return [routes.as_session(sb) for sb in await self.list_sandboxes()]

    async def delete_session(self, session_id: str) -> dict[str, Any]:
        return routes.deleted_session(await self.delete_sandbox(session_id), session_id)

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
        """create -> exec -> delete; the delete survives cancellation."""
        body = build_exec_request(
            command=command,
            code=code,
            commands=commands,
            files=files,
            timeout_seconds=timeout_seconds,
            seed=seed,
        )

        async def run() -> dict[str, Any]:
            sandbox = await self._send(routes.create_sandbox(template_id, None, None, egress))
            sandbox_id = routes.created_id(sandbox)
            try:
                result: dict[str, Any] = await self._send(
                    exec_call(f"/v1/sandboxes/{_seg(sandbox_id)}/exec", body, self.timeout)
                )
                return result
            finally:
                await uncancellable(self._reap(sandbox_id))

        observed = {**body, "template_id": template_id}
        if egress is not None:
            observed["egress"] = dict(egress)
        return await self._http.observed(run, target=template_id, one_shot=True, request=observed)

    async def _reap(self, sandbox_id: str) -> None:
        try:
            await self._send(routes.delete_sandbox(sandbox_id))
        except Exception as exc:
            log.warning("could not delete one-shot sandbox %s: %s", sandbox_id, exc)
