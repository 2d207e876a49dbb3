"""A session: one live sandbox on the gateway that you exec in, fork,
suspend and resume.

``client.session(template)`` returns a :class:`Session` that creates its
sandbox on entering the ``with`` block (or on first use) and deletes it on
leaving, also when the block raised. :meth:`Session.fork` is the raw wire
call; :meth:`Session.fork_group` is the managed GRPO group (see
:mod:`.fork_group`). ``suspend`` stops the sandbox's processes and pauses the
meter; ``resume`` continues them. :class:`AsyncSession` is the coroutine twin.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .._aio import uncancellable
from ..egress import egress_policy
from ..errors import GatewayError
from ..gateway import register_flows
from ..sandbox import ExecResult
from ..seeds import check_seed
from ..wire import DEFAULT_EXEC_TIMEOUT_S
from .fork_group import AsyncForkGroup, ForkGroup, Labels
from .status import fork_cap

if TYPE_CHECKING:
    from ..gateway import AsyncGatewayClient, GatewayClient

__all__ = ["AsyncSession", "Session", "template_id_of"]

log = logging.getLogger("collimate_rl.session")


def template_id_of(template: Any) -> str:
    """A template id from an id string or anything with an ``id`` (a
    :class:`~collimate_rl.TemplateHandle`, an :class:`~collimate_rl.Env`)."""
    tid = template if isinstance(template, str) else getattr(template, "id", None)
    if not isinstance(tid, str) or not tid:
        raise ValueError(
            f"template must be a template id or a handle with one, got {template!r:.80}"
        )
    return tid


class _SessionState:
    def __init__(
        self,
        template: Any,
        *,
        label: str | None,
        labels: Mapping[str, str] | None,
        egress: Mapping[str, Any] | None,
        default_timeout: int,
    ) -> None:
        self.template = template_id_of(template)
        self.label = label
        self.labels = dict(labels) if labels is not None else None
        self.egress = egress_policy(egress)
        self.default_timeout = default_timeout
        self.id: str | None = None
        self.raw_create: dict[str, Any] | None = None
        self.fork_time_ms: float | None = None
        self.create_time_ms: float | None = None
        self.endpoints: dict[str, str] = {}
        # groups forked from this session: closed with it, so a group the
        # caller never closed does not outlive its parent
        self._groups: list[Any] = []

    def _opened(self, answer: Mapping[str, Any]) -> None:
        sandbox_id = answer.get("id")
        if not isinstance(sandbox_id, str) or not sandbox_id:
            raise GatewayError(f"the gateway created a sandbox but sent no id: {answer!r:.200}")
        self.raw_create = dict(answer)
        self.id = sandbox_id
        for key in ("fork_time_ms", "create_time_ms"):
            value = answer.get(key)
            setattr(self, key, float(value) if isinstance(value, (int, float)) else None)
        self.endpoints = {str(k): str(v) for k, v in dict(answer.get("endpoints") or {}).items()}

    def _live_id(self, verb: str) -> str:
        if self.id is None:
            raise RuntimeError(f"cannot {verb} a session that is not open (use it in a with block)")
        return self.id

    def _exec_body(
        self,
        code: str | None,
        command: str | None,
        commands: Sequence[Sequence[str]] | None,
        files: Sequence[Mapping[str, str]] | None,
        timeout_seconds: int | None,
        seed: str | None,
    ) -> dict[str, Any]:
        if code is None and command is None and commands is None:
            raise ValueError("exec needs one of code, command= or commands=")
        check_seed(seed)
        return {
            "code": code,
            "command": command,
            "commands": commands,
            "files": files,
            "timeout_seconds": self.default_timeout if timeout_seconds is None else timeout_seconds,
            "seed": seed,
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.template!r}, sandbox={self.id or 'not open'})"


class Session(_SessionState):
    """One sandbox of ``template`` on a :class:`~collimate_rl.GatewayClient`."""

    def __init__(
        self,
        client: GatewayClient,
        template: Any,
        *,
        label: str | None = None,
        labels: Mapping[str, str] | None = None,
        egress: Mapping[str, Any] | None = None,
        default_timeout: int = DEFAULT_EXEC_TIMEOUT_S,
    ) -> None:
        super().__init__(
            template, label=label, labels=labels, egress=egress, default_timeout=default_timeout
        )
        self.client = client

    def open(self) -> Session:
        """Create the sandbox (once)."""
        if self.id is None:
            self._opened(
                self.client.create_sandbox(
                    self.template, label=self.label, labels=self.labels, egress=self.egress
                )
            )
        return self

    def exec(
        self,
        code: str | None = None,
        *,
        command: str | None = None,
        commands: Sequence[Sequence[str]] | None = None,
        files: Sequence[Mapping[str, str]] | None = None,
        timeout_seconds: int | None = None,
        seed: str | None = None,
    ) -> ExecResult:
        """Run in the sandbox (opened on first use). A demo key over its limit
        raises :class:`~collimate_rl.DemoTierLimit` with the server's words."""
        body = self._exec_body(code, command, commands, files, timeout_seconds, seed)
        self.open()
        assert self.id is not None
        return ExecResult.from_response(self.client.exec(self.id, **body))

    def fork(self, n: int = 1, labels: Labels = None) -> list[dict[str, Any]]:
        """The raw ``fork`` call: ``n`` live children as ``[{id, endpoints?}]``.
        You own them (delete each); over the tier's cap the server says 400."""
        self.open()
        assert self.id is not None
        answer = self.client.fork(self.id, count=n, labels=labels)
        return [dict(c) for c in answer.get("children") or []]

    def fork_group(
        self,
        n: int,
        *,
        seed_mode: str = "crn",
        base_seed: str | None = None,
        labels: Labels = None,
        default_timeout: int | None = None,
        max_per_call: int | None = None,
    ) -> ForkGroup:
        """Fork a group of exactly ``n`` children (see :class:`ForkGroup`).

        ``max_per_call`` defaults to the key tier's cap (4 / 32 / 64).
        Bad arguments fail before anything is created.
        """
        group = ForkGroup(
            self,
            n,
            seed_mode=seed_mode,
            base_seed=base_seed,
            labels=labels,
            default_timeout=default_timeout or self.default_timeout,
            max_per_call=max_per_call if max_per_call is not None else fork_cap(self.client),
        )
        self._groups.append(group)
        return group

    def suspend(self) -> dict[str, Any]:
        """Stop the sandbox's processes; the meter pauses. ``{id, state}``."""
        return self.client.suspend(self._live_id("suspend"))

    def resume(self) -> dict[str, Any]:
        """Continue a suspended sandbox. ``{id, state}``."""
        return self.client.resume(self._live_id("resume"))

    def close(self) -> None:
        """Delete the sandbox and the children of its fork groups
        (idempotent; a sandbox already gone is fine)."""
        groups, self._groups = self._groups, []
        for group in groups:
            try:
                group.close()
            except Exception as exc:  # the parent still goes
                log.warning("could not close a fork group of %s: %s", self.id, exc)
        sandbox_id, self.id = self.id, None
        if sandbox_id is not None:
            self.client.delete_sandbox(sandbox_id)

    def __enter__(self) -> Session:
        return self.open()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self.close()
        except Exception:
            if exc_type is None:
                raise
            log.warning("session teardown failed while %s propagated", exc_type.__name__)


class AsyncSession(_SessionState):
    """:class:`Session` on an :class:`~collimate_rl.AsyncGatewayClient`
    (``async with client.session(t) as s`` or ``s = await client.session(t)``)."""

    def __init__(
        self,
        client: AsyncGatewayClient,
        template: Any,
        *,
        label: str | None = None,
        labels: Mapping[str, str] | None = None,
        egress: Mapping[str, Any] | None = None,
        default_timeout: int = DEFAULT_EXEC_TIMEOUT_S,
    ) -> None:
        super().__init__(
            template, label=label, labels=labels, egress=egress, default_timeout=default_timeout
        )
        self.client = client

    async def open(self) -> AsyncSession:
        if self.id is None:
            self._opened(
                await self.client.create_sandbox(
                    self.template, label=self.label, labels=self.labels, egress=self.egress
                )
            )
        return self

    def __await__(self) -> Generator[Any, None, AsyncSession]:
        return self.open().__await__()

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
        body = self._exec_body(code, command, commands, files, timeout_seconds, seed)
        await self.open()
        assert self.id is not None
        return ExecResult.from_response(await self.client.exec(self.id, **body))

    async def fork(self, n: int = 1, labels: Labels = None) -> list[dict[str, Any]]:
        await self.open()
        assert self.id is not None
        answer = await self.client.fork(self.id, count=n, labels=labels)
        return [dict(c) for c in answer.get("children") or []]

    def fork_group(
        self,
        n: int,
        *,
        seed_mode: str = "crn",
        base_seed: str | None = None,
        labels: Labels = None,
        default_timeout: int | None = None,
        max_per_call: int | None = None,
    ) -> AsyncForkGroup:
        """The group, forked when awaited or entered (see :class:`AsyncForkGroup`)."""
        group = AsyncForkGroup(
            self,
            n,
            seed_mode=seed_mode,
            base_seed=base_seed,
            labels=labels,
            default_timeout=default_timeout or self.default_timeout,
            max_per_call=max_per_call if max_per_call is not None else fork_cap(self.client),
        )
        self._groups.append(group)
        return group

    async def suspend(self) -> dict[str, Any]:
        return await self.client.suspend(self._live_id("suspend"))

    async def resume(self) -> dict[str, Any]:
        return await self.client.resume(self._live_id("resume"))

    async def close(self) -> None:
        """Delete the sandbox and its groups' children, even while the
        caller is being cancelled."""
        groups, self._groups = self._groups, []
        for group in groups:
            try:
                await group.close()
            except Exception as exc:
                log.warning("could not close a fork group of %s: %s", self.id, exc)
        sandbox_id, self.id = self.id, None
        if sandbox_id is not None:
            await uncancellable(self.client.delete_sandbox(sandbox_id))

    async def __aenter__(self) -> AsyncSession:
        return await self.open()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await self.close()
        except Exception:
            if exc_type is None:
                raise
            log.warning("session teardown failed while %s propagated", exc_type.__name__)


# ``client.session(...)`` builds these (the client is a layer below: see gateway.py)
register_flows(Session=Session, AsyncSession=AsyncSession)
