"""Sandbox: one live clone (session) of a template, the in-worker hot path.

``Sandbox`` forks a clone on :meth:`~Sandbox.start` (or on entering its
``with`` block), runs any number of execs in it, and reaps it on
:meth:`~Sandbox.close`. It works over either wire (any client with the
session surface) and moves arbitrary bytes with :meth:`~Sandbox.upload_bytes`
and :meth:`~Sandbox.download` (see :mod:`collimate_rl.fileio`).
:class:`AsyncSandbox` is the same object for an async client.

Crash recovery: :meth:`Sandbox.attach` adopts a session that is already live
(validated with ``GET /v1/sessions/{id}``, nothing forked) so a replacement
worker or a janitor can resume or reap an orphaned clone; :meth:`Sandbox.adopt`
does the same without the round trip (the caller vouches for the id).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .egress import egress_policy
from .errors import CollimateError
from .fileio import check_step, download_command, parse_download, upload_plan
from .seeds import check_seed

if TYPE_CHECKING:
    from .transport import AsyncSessionClient, SessionClient

__all__ = ["AsyncSandbox", "ExecResult", "Sandbox", "rollout_once", "rollout_once_async"]

#: ``fork_time_ms`` at or under this means the clone was served warm.
WARM_FORK_MS = 1.0


def _float(value: Any) -> float:
    try:
        return float(value) if value is not None else 0.0
    except (TypeError, ValueError):
        return 0.0


@dataclass
class ExecResult:
    """One exec's answer. ``stdout`` is the guest's merged stdout+stderr
    (``stderr`` is always ``""`` on this contract); ``raw`` is the whole
    response."""

    stdout: str
    stderr: str
    exit_code: int
    fork_time_ms: float
    exec_time_ms: float
    total_time_ms: float
    seed: str | None
    seed_ack: str | None
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """The command exited 0 (a timeout is exit code -1)."""
        return self.exit_code == 0

    @classmethod
    def from_response(cls, r: Mapping[str, Any]) -> ExecResult:
        code = r.get("exit_code")
        return cls(
            stdout=str(r.get("stdout") or ""),
            stderr=str(r.get("stderr") or ""),
            exit_code=code if isinstance(code, int) else -1,
            fork_time_ms=_float(r.get("fork_time_ms")),
            exec_time_ms=_float(r.get("exec_time_ms")),
            total_time_ms=_float(r.get("total_time_ms")),
            seed=r.get("seed"),
            seed_ack=r.get("seed_ack"),
            raw=dict(r),
        )


def _session_fields(created: Mapping[str, Any]) -> tuple[str, float | None, dict[str, str]]:
    session_id = created.get("session_id") or created.get("id")
    if not isinstance(session_id, str) or not session_id:
        raise CollimateError(f"create_session answered without a session id: {created!r:.200}")
    fork = created.get("fork_time_ms")
    endpoints = created.get("endpoints") or {}
    return (
        session_id,
        float(fork) if isinstance(fork, (int, float)) else None,
        {str(k): str(v) for k, v in dict(endpoints).items()},
    )


def _template_of(info: Mapping[str, Any], fallback: str) -> str:
    template = info.get("template_id") or info.get("template") or fallback
    return str(template)


class _SandboxState:
    """What both sandboxes hold and how they build an exec."""

    def __init__(
        self,
        template: str,
        *,
        egress: Mapping[str, Any] | None,
        default_timeout: int,
        keep_on_error: bool,
        default_seed: str | None,
    ) -> None:
        check_seed(default_seed)
        self.template = template
        self.egress = egress_policy(egress)  # checked here, not as a 400 later
        self.default_timeout = default_timeout
        self.keep_on_error = keep_on_error
        self.default_seed = default_seed
        self.session_id: str | None = None
        self.fork_time_ms: float | None = None
        self.endpoints: dict[str, str] = {}
        self._owns_client = False

    @property
    def warm_hit(self) -> bool:
        """The clone was served from a warm template (``fork_time_ms`` <= 1 ms)."""
        return self.fork_time_ms is not None and self.fork_time_ms <= WARM_FORK_MS

    @property
    def started(self) -> bool:
        return self.session_id is not None

    def _exec_kwargs(
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
        seed = seed if seed is not None else self.default_seed
        check_seed(seed)
        return {
            "code": code,
            "command": command,
            "commands": commands,
            "files": files,
            "timeout_seconds": timeout_seconds
            if timeout_seconds is not None
            else self.default_timeout,
            "seed": seed,
        }

    def _adopted(self, session_id: str) -> None:
        self.session_id = session_id
        self.fork_time_ms = None

    def __repr__(self) -> str:
        state = self.session_id or "not started"
        return f"{type(self).__name__}({self.template!r}, session={state})"


class Sandbox(_SandboxState):
    """A live clone of ``template`` (blocking client).

    ``client`` defaults to :func:`collimate_rl.connect` (resolved from the
    environment; closed with the sandbox). ``egress`` is the clone's own
    network policy (networked templates only; see :mod:`collimate_rl.egress`,
    e.g. ``egress={"preset": "rl-leakage"}``). ``keep_on_error=True`` leaves the clone alive
    when the ``with`` block raises, for inspection (its ``session_id`` is in
    the repr). ``default_seed`` is sent with every exec that names none.
    """

    def __init__(
        self,
        template: str,
        *,
        client: SessionClient | None = None,
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
            from .transport import connect

            client = connect()
            self._owns_client = True
        self.client: SessionClient = client

    # lifecycle
    def start(self) -> Sandbox:
        """Fork the clone (no-op when already live)."""
        if self.session_id is None:
            created = self.client.create_session(self.template, egress=self.egress)
            self.session_id, self.fork_time_ms, self.endpoints = _session_fields(created)
        return self

    def close(self) -> None:
        """Reap the clone (idempotent; a clone already gone is fine)."""
        session_id, self.session_id = self.session_id, None
        try:
            if session_id is not None:
                self.client.delete_session(session_id)
        finally:
            if self._owns_client:
                self.client.close()

    def reset(self) -> Sandbox:
        """Replace the clone with a fresh fork of the template."""
        session_id, self.session_id = self.session_id, None
        if session_id is not None:
            self.client.delete_session(session_id)
        return self.start()

    @classmethod
    def attach(cls, client: SessionClient, session_id: str, **kwargs: Any) -> Sandbox:
        """Adopt a live session after checking it exists (``GET``; raises
        :class:`~collimate_rl.CollimateError` 404 ``no_such_session`` if not)."""
        info = client.get_session(session_id)
        template = _template_of(info, str(kwargs.pop("template", "")))
        sandbox = cls(template, client=client, **kwargs)
        sandbox._adopted(session_id)
        return sandbox

    @classmethod
    def adopt(
        cls, client: SessionClient, session_id: str, *, template: str = "", **kwargs: Any
    ) -> Sandbox:
        """Adopt ``session_id`` without a round trip (no validation)."""
        sandbox = cls(template, client=client, **kwargs)
        sandbox._adopted(session_id)
        return sandbox

    def __enter__(self) -> Sandbox:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is not None and self.keep_on_error:
            return
        self.close()

    # execs
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
        """Run in the clone (started on first use): ``code`` for the
        template's interpreter, or a ``command`` / ``commands`` for ``sh``."""
        kwargs = self._exec_kwargs(code, command, commands, files, timeout_seconds, seed)
        self.start()
        assert self.session_id is not None
        return ExecResult.from_response(self.client.session_exec(self.session_id, **kwargs))

    def _run(self, command: str, timeout_seconds: int | None) -> dict[str, Any]:
        self.start()
        assert self.session_id is not None
        return self.client.session_exec(
            self.session_id,
            command=command,
            timeout_seconds=timeout_seconds or self.default_timeout,
        )

    def upload_bytes(self, path: str, data: bytes, *, timeout_seconds: int | None = None) -> None:
        """Write ``data`` to ``path`` in the clone, byte for byte (verified
        in the guest, moved into place only when complete)."""
        plan = upload_plan(path, data)
        try:
            for step in plan.steps:
                check_step(self._run(step, timeout_seconds), f"upload of {path}")
        except BaseException:
            with contextlib.suppress(Exception):  # the original error is what matters
                self._run(plan.cleanup, timeout_seconds)
            raise

    def download(self, path: str, *, timeout_seconds: int | None = None) -> bytes:
        """The exact bytes of ``path`` in the clone (sha256-verified)."""
        frame = download_command(path)
        return parse_download(frame, self._run(frame.command, timeout_seconds))


class AsyncSandbox(_SandboxState):
    """:class:`Sandbox` for an async client (``async with AsyncSandbox(...)``).

    ``client`` defaults to :func:`collimate_rl.connect_async`.
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
            from .transport import connect_async

            client = connect_async()
            self._owns_client = True
        self.client: AsyncSessionClient = client

    async def start(self) -> AsyncSandbox:
        if self.session_id is None:
            created = await self.client.create_session(self.template, egress=self.egress)
            self.session_id, self.fork_time_ms, self.endpoints = _session_fields(created)
        return self

    async def close(self) -> None:
        session_id, self.session_id = self.session_id, None
        try:
            if session_id is not None:
                await self.client.delete_session(session_id)
        finally:
            if self._owns_client:
                await self.client.aclose()

    async def reset(self) -> AsyncSandbox:
        session_id, self.session_id = self.session_id, None
        if session_id is not None:
            await self.client.delete_session(session_id)
        return await self.start()

    @classmethod
    async def attach(
        cls, client: AsyncSessionClient, session_id: str, **kwargs: Any
    ) -> AsyncSandbox:
        info = await client.get_session(session_id)
        template = _template_of(info, str(kwargs.pop("template", "")))
        sandbox = cls(template, client=client, **kwargs)
        sandbox._adopted(session_id)
        return sandbox

    @classmethod
    def adopt(
        cls, client: AsyncSessionClient, session_id: str, *, template: str = "", **kwargs: Any
    ) -> AsyncSandbox:
        sandbox = cls(template, client=client, **kwargs)
        sandbox._adopted(session_id)
        return sandbox

    async def __aenter__(self) -> AsyncSandbox:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is not None and self.keep_on_error:
            return
        await self.close()

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
        kwargs = self._exec_kwargs(code, command, commands, files, timeout_seconds, seed)
        await self.start()
        assert self.session_id is not None
        return ExecResult.from_response(await self.client.session_exec(self.session_id, **kwargs))

    async def _run(self, command: str, timeout_seconds: int | None) -> dict[str, Any]:
        await self.start()
        assert self.session_id is not None
        return await self.client.session_exec(
            self.session_id,
            command=command,
            timeout_seconds=timeout_seconds or self.default_timeout,
        )

    async def upload_bytes(
        self, path: str, data: bytes, *, timeout_seconds: int | None = None
    ) -> None:
        plan = upload_plan(path, data)
        try:
            for step in plan.steps:
                check_step(await self._run(step, timeout_seconds), f"upload of {path}")
        except BaseException:
            with contextlib.suppress(Exception):
                await self._run(plan.cleanup, timeout_seconds)
            raise

    async def download(self, path: str, *, timeout_seconds: int | None = None) -> bytes:
        frame = download_command(path)
        return parse_download(frame, await self._run(frame.command, timeout_seconds))


def rollout_once(
    template: str,
    *,
    code: str | None = None,
    command: str | None = None,
    commands: Sequence[Sequence[str]] | None = None,
    files: Sequence[Mapping[str, str]] | None = None,
    timeout_seconds: int = 60,
    seed: str | None = None,
    egress: Mapping[str, Any] | None = None,
    client: SessionClient | None = None,
) -> ExecResult:
    """One exec in an ephemeral clone of ``template`` (forked, run, reaped)."""
    if code is None and command is None and commands is None:
        raise ValueError("rollout_once needs one of code=, command= or commands=")
    check_seed(seed)
    owned = client is None
    if client is None:
        from .transport import connect

        client = connect()
    try:
        response = client.exec_once(
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
            client.close()
    return ExecResult.from_response(response)


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
    """:func:`rollout_once` with an async client."""
    if code is None and command is None and commands is None:
        raise ValueError("rollout_once needs one of code=, command= or commands=")
    check_seed(seed)
    owned = client is None
    if client is None:
        from .transport import connect_async

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
