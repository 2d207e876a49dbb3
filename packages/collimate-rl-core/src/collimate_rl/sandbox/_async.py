"""The sandbox ``AsyncSandbox`` and ``rollout_once_async``.

One of a pair of twins: the async module is written by hand, its blocking
twin generated from it by ``tools/unasync.py`` (edit the async one, then
``hatch run lint:unasync``). The public module is ``collimate_rl.sandbox``;
what both twins share is ``collimate_rl.sandbox._state``.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._transport.gateway_calls import CDP_PORT
from ..fileio import check_step, download_command, parse_download, upload_plan
from ..kernel._async import AsyncKernel
from ..seeds import check_seed
from ._state import ExecResult, SandboxState, exec_kwargs, session_fields, template_of

if TYPE_CHECKING:
    from ..transport._async import AsyncSessionClient
    from ..tunnel import PortForward
__all__ = ["AsyncIngress", "AsyncSandbox", "rollout_once_async"]


class AsyncIngress(abc.ABC):
    """The guest's services reached from this machine, as a sandbox and a
    gateway session both offer them: a gateway client mints the URLs, for
    the live sandbox that :meth:`_ingress` names (started first)."""

    @abc.abstractmethod
    async def _ingress(self, what: str) -> tuple[Any, str]:
        """The gateway client and the id of the live sandbox (started if need
        be), for ``what``; a client that cannot mint connect URLs refuses."""

    # services reached from outside
    async def connect_url(self, port: int, *, ttl_seconds: int = 600, protocol: str = "tcp") -> str:
        """A short-lived ``ws://`` / ``wss://`` URL to reach guest ``port`` of
        the sandbox from this machine (started first if need be); gateway
        clients only. See :meth:`AsyncGatewayClient.connect_url
        <collimate_rl.AsyncGatewayClient.connect_url>` for the refusals (a
        key below pro; a port the template does not expose, 409
        ``port_not_exposed``)."""
        client, live_id = await self._ingress("connect_url")
        answer = await client.connect_url(live_id, port, ttl_seconds=ttl_seconds, protocol=protocol)
        return str(answer["url"])

    async def cdp_url(self, *, ttl_seconds: int = 600) -> str:
        """The connect URL of the sandbox's Chrome DevTools port (9222), in
        ``cdp`` mode (what ``connect_over_cdp`` takes)."""
        return await self.connect_url(CDP_PORT, ttl_seconds=ttl_seconds, protocol="cdp")

    async def port_forward(
        self,
        port: int,
        *,
        local_port: int = 0,
        local_host: str = "127.0.0.1",
        ttl_seconds: int = 3600,
    ) -> PortForward:
        """Guest ``port`` of the sandbox on a loopback port here: a started
        :class:`~collimate_rl.PortForward` (a context manager; one tunnel per
        connection it accepts); gateway clients only."""
        client, live_id = await self._ingress("port_forward")
        forward: PortForward = await client.port_forward(
            live_id,
            port,
            local_port=local_port,
            local_host=local_host,
            ttl_seconds=ttl_seconds,
        )
        return forward


class AsyncSandbox(SandboxState, AsyncIngress):
    """A live clone of ``template``.

    ``client`` defaults to :func:`collimate_rl.connect_async` (resolved from
    the environment; closed with the sandbox). ``egress`` is the clone's own
    network policy (networked templates only; see :mod:`collimate_rl.egress`,
    e.g. ``egress={"preset": "rl-leakage"}``). ``keep_on_error=True`` leaves the clone alive
    when the ``async with`` block raises, for inspection (its ``session_id`` is in
    the repr). ``default_seed`` is sent with every exec that names none.
    """

    def __init__(
        self,
        template: str,
        *,
        client: AsyncSessionClient | None = None,
        egress: Mapping[str, Any] | None = None,
        default_timeout: int = 60,
        keep_on_error: bool = False,
        default_seed: str | None = None,
    ) -> None:
        super().__init__(
            template,
            egress=egress,
            default_timeout=default_timeout,
            keep_on_error=keep_on_error,
            default_seed=default_seed,
        )
        if client is None:
            from ..transport import connect_async

            client = connect_async()
            self._owns_client = True
        self.client: AsyncSessionClient = client

    # lifecycle
    async def start(self) -> AsyncSandbox:
        """Fork the clone (no-op when already live)."""
        if self.session_id is None:
            created = await self.client.create_session(self.template, egress=self.egress)
            self.session_id, self.fork_time_ms, self.endpoints = session_fields(created)
        return self

    async def close(self) -> None:
        """Reap the clone (idempotent; a clone already gone is fine)."""
        session_id, self.session_id = self.session_id, None
        try:
            if session_id is not None:
                await self.client.delete_session(session_id)
        finally:
            if self._owns_client:
                await self.client.aclose()

    async def reset(self) -> AsyncSandbox:
        """Replace the clone with a fresh fork of the template."""
        session_id, self.session_id = self.session_id, None
        if session_id is not None:
            await self.client.delete_session(session_id)
        return await self.start()

    @classmethod
    async def attach(
        cls, client: AsyncSessionClient, session_id: str, **kwargs: Any
    ) -> AsyncSandbox:
        """Adopt a live session after checking it exists (``GET``; raises
        :class:`~collimate_rl.CollimateError` 404 ``no_such_session`` if not)."""
        info = await client.get_session(session_id)
        template = template_of(info, str(kwargs.pop("template", "")))
        sandbox = cls(template, client=client, **kwargs)
        sandbox._adopted(session_id)
        return sandbox

    @classmethod
    def adopt(
        cls, client: AsyncSessionClient, session_id: str, *, template: str = "", **kwargs: Any
    ) -> AsyncSandbox:
        """Adopt ``session_id`` without a round trip (no validation)."""
        sandbox = cls(template, client=client, **kwargs)
        sandbox._adopted(session_id)
        return sandbox

    async def __aenter__(self) -> AsyncSandbox:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        if exc_info[0] is not None and self.keep_on_error:
            return
        await self.close()

    # execs
    async def exec(
        self,
        code: str | None = None,
        *,
        command: str | None = None,
        commands: Sequence[Sequence[str]] | None = None,
        files: Sequence[Mapping[str, str]] | None = None,
        timeout_seconds: int | None = None,
        seed: str | None = None,
    ) -> ExecResult:
        """Run in the clone (started on first use): ``code`` for the
        template's interpreter, or a ``command`` / ``commands`` for ``sh``."""
        seed = seed if seed is not None else self.default_seed
        kwargs = exec_kwargs(
            code, command, commands, files, timeout_seconds, seed, self.default_timeout
        )
        return ExecResult.from_response(await self._session_exec(**kwargs))

    async def _session_exec(self, **kwargs: Any) -> dict[str, Any]:
        """The raw answer of one exec in the clone (started first)."""
        await self.start()
        assert self.session_id is not None
        return await self.client.session_exec(self.session_id, **kwargs)

    async def _run(self, command: str, timeout_seconds: int | None) -> dict[str, Any]:
        timeout = timeout_seconds or self.default_timeout
        return await self._session_exec(command=command, timeout_seconds=timeout)

    async def _run_code(self, code: str, timeout_seconds: int | None) -> dict[str, Any]:
        timeout = timeout_seconds or self.default_timeout
        return await self._session_exec(code=code, timeout_seconds=timeout)

    def kernel(
        self, *, timeout: float = 30.0, output_limit: int = 64 * 1024, python: str = "python3"
    ) -> AsyncKernel:
        """A stateful Python interpreter in this clone (see
        :class:`~collimate_rl.AsyncKernel`), started on first use: names
        persist between its cells. ``timeout`` is each cell's default (in
        seconds), ``output_limit`` caps a cell's stdout, stderr and value
        (characters each), ``python`` is the guest's interpreter."""
        return AsyncKernel(self, timeout=timeout, output_limit=output_limit, python=python)

    async def _ingress(self, what: str) -> tuple[Any, str]:
        client = self._ingress_client(what)
        await self.start()
        assert self.session_id is not None
        return client, self.session_id

    async def upload_bytes(
        self, path: str, data: bytes, *, timeout_seconds: int | None = None
    ) -> None:
        """Write ``data`` to ``path`` in the clone, byte for byte (verified
        in the guest, moved into place only when complete)."""
        plan = upload_plan(path, data)
        try:
            for step in plan.steps:
                check_step(await self._run(step, timeout_seconds), f"upload of {path}")
        except BaseException:
            with contextlib.suppress(Exception):  # the original error is what matters
                await self._run(plan.cleanup, timeout_seconds)
            raise

    async def download(self, path: str, *, timeout_seconds: int | None = None) -> bytes:
        """The exact bytes of ``path`` in the clone (sha256-verified)."""
        frame = download_command(path)
        return parse_download(frame, await self._run(frame.command, timeout_seconds))


async def rollout_once_async(
    template: str,
    *,
    code: str | None = None,
    command: str | None = None,
    commands: Sequence[Sequence[str]] | None = None,
    files: Sequence[Mapping[str, str]] | None = None,
    timeout_seconds: int = 60,
    seed: str | None = None,
    egress: Mapping[str, Any] | None = None,
    client: AsyncSessionClient | None = None,
) -> ExecResult:
    """One exec in an ephemeral clone of ``template`` (forked, run, reaped)."""
    if code is None and command is None and commands is None:
        raise ValueError("rollout_once needs one of code=, command= or commands=")
    check_seed(seed)
    owned = client is None
    if client is None:
        from ..transport import connect_async

        client = connect_async()
    try:
        response = await client.exec_once(
            template,
            code=code,
            command=command,
            commands=commands,
            files=files,
            timeout_seconds=timeout_seconds,
            seed=seed,
            egress=egress,
        )
    finally:
        if owned:
            await client.aclose()
    return ExecResult.from_response(response)
