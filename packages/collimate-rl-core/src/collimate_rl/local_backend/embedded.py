"""The local backend in process: a real server on a background thread.

``LocalCollimateBackend`` runs :class:`~.server.BackendServer` on its own
event loop in a daemon thread, so sync code (and async tests, whose loop it
never touches) reach it over a real socket exactly as they would reach a
daemon::

    with LocalCollimateBackend() as backend:
        client = CollimateClient(backend.base_url)
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .config import (
    DEFAULT_KERNEL_TTL_S,
    DEFAULT_MAX_INFLIGHT,
    DEFAULT_SESSION_TTL_S,
    IsolationSetting,
    ServerConfig,
)
from .engine.api import Engine
from .server import BackendServer

__all__ = ["LocalCollimateBackend"]


class LocalCollimateBackend:
    """A local daemon-wire server for tests, demos and notebooks.

    ``templates`` may be a TOML path, a list of template tables, or a mapping
    ``{id: table}`` (the earlier release's ``{"py": {"interpreter": ...}}``
    shape works); in-process tables replace built-ins of the same id.
    ``port=None`` with ``socket_path`` serves the unix socket only.
    ``start_timeout_s`` bounds ``start()``; it is generous because a start
    waits for each template's warm interpreter, which on a node saturated by
    other work can take a minute or more.
    """

    def __init__(
        self,
        templates: Any = None,
        host: str = "127.0.0.1",
        port: int | None = 0,
        *,
        socket_path: str | Path | None = None,
        templates_file: str | Path | None = None,
        isolation: IsolationSetting = "auto",
        max_inflight: int = DEFAULT_MAX_INFLIGHT,
        run_slots: int | None = None,
        session_ttl: float = DEFAULT_SESSION_TTL_S,
        tombstone_ttl: float = 600.0,
        kernel_ttl: float = DEFAULT_KERNEL_TTL_S,
        use_plugins: bool = True,
        override_templates: bool = False,
        engine: Engine | None = None,
        start_timeout_s: float = 180.0,
        api_keys: Sequence[str] = (),
        api_keys_file: str | Path | None = None,
        gateway: bool = True,
        gateway_max_warm: int = 4,
        allow_non_loopback: bool = False,
        drain_linger_s: float = 2.0,
    ) -> None:
        self.config = ServerConfig(
            host=host,
            allow_non_loopback=allow_non_loopback,
            port=port,
            socket_path=str(socket_path) if socket_path is not None else None,
            templates_file=templates_file,
            templates=templates,
            use_plugins=use_plugins,
            override_templates=override_templates,
            isolation=isolation,
            max_inflight=max_inflight,
            run_slots=run_slots,
            session_ttl=session_ttl,
            tombstone_ttl=tombstone_ttl,
            kernel_ttl=kernel_ttl,
            gateway=gateway,
            api_keys=tuple(api_keys),
            api_keys_file=api_keys_file,
            gateway_max_warm=gateway_max_warm,
            drain_linger_s=drain_linger_s,
        )
        self._engine = engine
        self._start_timeout_s = start_timeout_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: BackendServer | None = None
        self._lock = threading.Lock()

    # -- addresses ---------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` (raises if serving a unix socket only)."""
        server = self._require()
        if server.base_url is None:
            raise RuntimeError("this backend listens on a unix socket only (see .socket_path)")
        return server.base_url

    @property
    def socket_path(self) -> str | None:
        return self._require().socket_path

    @property
    def host(self) -> str:
        return self.config.host

    @property
    def port(self) -> int | None:
        return self._require().port

    @property
    def generated_keys(self) -> dict[str, str]:
        """``{"demo": key, "pro": key}`` made up at start when no ``api_keys``
        (nor keys file) were given; empty otherwise."""
        return dict(self._require().generated_keys)

    @property
    def server(self) -> BackendServer:
        return self._require()

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> LocalCollimateBackend:
        """Start serving (idempotent); returns ``self``."""
        with self._lock:
            if self._server is not None and not self._server.stopped:
                return self
            loop = asyncio.new_event_loop()
            started: concurrent.futures.Future[BackendServer] = concurrent.futures.Future()
            thread = threading.Thread(
                target=self._run, args=(loop, started), name="collimate-local-backend", daemon=True
            )
            thread.start()
            try:
                server = started.result(timeout=self._start_timeout_s)
            except BaseException:
                if not started.done():
                    # A start given up on is cancelled, not left running: what
                    # it started so far (zygotes, sockets) is torn down with it.
                    with _suppress_closed_loop():
                        loop.call_soon_threadsafe(_cancel_all, loop)
                thread.join(timeout=30)
                raise
            self._loop, self._thread, self._server = loop, thread, server
            atexit.register(self.stop)  # a forgotten backend still cleans up at exit
            return self

    def _run(
        self, loop: asyncio.AbstractEventLoop, started: concurrent.futures.Future[BackendServer]
    ) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._serve(started))
        finally:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()

    async def _serve(self, started: concurrent.futures.Future[BackendServer]) -> None:
        server = BackendServer(self.config, engine=self._engine)
        try:
            await server.start()
        except BaseException as exc:
            started.set_exception(exc)
            return
        started.set_result(server)
        await server.wait_stopped()

    def stop(self, timeout_s: float = 60.0) -> None:
        """Stop the server and wait until everything it started is gone.
        Safe to call twice, or after a drain already stopped it."""
        with self._lock:
            loop, thread, server = self._loop, self._thread, self._server
            if loop is None or thread is None or server is None:
                return
            if not server.stopped and not loop.is_closed():
                with _suppress_closed_loop():
                    fut = asyncio.run_coroutine_threadsafe(server.stop(), loop)
                    fut.result(timeout=timeout_s)
            thread.join(timeout=timeout_s)
            self._loop = self._thread = None
            atexit.unregister(self.stop)

    def drain(self) -> None:
        """Start a drain (what SIGTERM does to the CLI server)."""
        server, loop = self._require(), self._loop
        assert loop is not None
        loop.call_soon_threadsafe(server.drain)

    def wait_stopped(self, timeout_s: float | None = None) -> bool:
        """Block until the server stopped (after a drain); False on timeout."""
        thread = self._thread
        if thread is None:
            return True
        thread.join(timeout=timeout_s)
        return not thread.is_alive()

    def health(self) -> dict[str, Any]:
        """The ``/v1/health`` body, read on the server's loop (no HTTP)."""
        server, loop = self._require(), self._loop
        assert loop is not None
        fut = asyncio.run_coroutine_threadsafe(_health(server), loop)
        return fut.result(timeout=10)

    def _require(self) -> BackendServer:
        if self._server is None:
            raise RuntimeError("the backend is not started (use start() or a with block)")
        return self._server

    def __enter__(self) -> LocalCollimateBackend:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    async def __aenter__(self) -> LocalCollimateBackend:
        await asyncio.get_running_loop().run_in_executor(None, self.start)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.stop)


def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    for task in asyncio.all_tasks(loop):
        task.cancel()


async def _health(server: BackendServer) -> dict[str, Any]:
    return server.health()


class _suppress_closed_loop:
    """A drain may close the loop between our check and the submit."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        return exc_type is RuntimeError and "closed" in str(exc)
