"""One local backend server: engine + service + wires + listeners.

:class:`BackendServer` runs on an asyncio loop (the CLI's main loop, or the
background thread of :class:`~.embedded.LocalCollimateBackend`). Its
lifecycle is ``start()`` -> (``drain()`` or ``stop()``) -> ``wait_stopped()``;
a drain refuses new work with 503 ``draining``, lets admitted work finish,
then stops. A stop removes everything the server created: clones (through
the engine), the unix socket file, the listening ports.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import socket
import stat
from typing import Any

from .config import ServerConfig
from .daemon_wire import build_daemon_router
from .engine.api import Engine
from .gateway_wire import Gateway, build_gateway_router
from .http_server import HttpServer
from .routing import Dispatcher
from .run_queue import RunQueue, usable_cpus
from .sandbox_fusion import build_sandbox_fusion_router
from .service import BackendService
from .template_registry import collect_templates
from .tenants import KeyRing, generate_keys

log = logging.getLogger("collimate_rl.local_backend")


def _clear_stale_socket(path: str) -> None:
    """Remove a socket file left by a dead server; refuse to steal a live one
    or to delete something that is not a socket."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise OSError(errno.EEXIST, f"{path} exists and is not a socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except (ConnectionRefusedError, FileNotFoundError):
        os.unlink(path)
        return
    finally:
        probe.close()
    raise OSError(errno.EADDRINUSE, f"another server is listening on {path}")


class BackendServer:
    """The whole backend on the running loop."""

    def __init__(self, config: ServerConfig, *, engine: Engine | None = None) -> None:
        self.config = config
        self._engine = engine
        self.service: BackendService | None = None
        self.http: HttpServer | None = None
        self._listeners: list[asyncio.Server] = []
        self._socket_inode: int | None = None
        self.port: int | None = None
        self.socket_path: str | None = None
        self._stopped = asyncio.Event()
        self._stopping: asyncio.Task[None] | None = None
        self._drain_task: asyncio.Task[None] | None = None
        self.gateway: Gateway | None = None
        # keys this server made up because none was given ({tier: key}):
        # shown once in the start-up banner, nowhere else
        self.generated_keys: dict[str, str] = {}

    @property
    def base_url(self) -> str | None:
        if self.port is None:
            return None
        host = self.config.host
        shown = f"[{host}]" if ":" in host else host
        if host in ("0.0.0.0", "::"):
            shown = "127.0.0.1"
        return f"http://{shown}:{self.port}"

    async def start(self) -> None:
        cfg = self.config
        specs = collect_templates(
            templates_file=cfg.templates_file,
            templates=cfg.templates,
            use_plugins=cfg.use_plugins,
            allow_override=cfg.override_templates,
        )
        if self._engine is None:
            # Imported here: configuration and wire code stay importable (and
            # testable) without touching the engine's machinery.
            from .engine import make_engine
            from .engine.exposure import server_private_paths

            hidden = server_private_paths(
                str(cfg.templates_file) if cfg.templates_file else None, cfg.socket_path
            )
            self._engine = make_engine(cfg.isolation, hidden=hidden)
        engine = self._engine
        service = BackendService(
            engine,
            specs,
            max_inflight=cfg.max_inflight,
            session_ttl=cfg.session_ttl,
            kernel_ttl=cfg.kernel_ttl,
            tombstone_ttl=cfg.tombstone_ttl,
            run_queue=RunQueue(usable_cpus() if cfg.run_slots is None else cfg.run_slots),
        )
        self.service = service
        try:
            await service.start()
            routers = [build_daemon_router(service, on_drain=self.drain)]
            if cfg.gateway:
                self.gateway = Gateway(service, self._keys(), max_warm=cfg.gateway_max_warm)
                routers.insert(0, build_gateway_router(self.gateway))
            self.http = HttpServer(
                Dispatcher(
                    [*routers, build_sandbox_fusion_router(service)], secret=cfg.cluster_secret
                ),
                max_body=cfg.max_body_bytes,
                idle_timeout_s=cfg.idle_connection_timeout_s,
            )
            await self._listen()
        except BaseException:
            await self._teardown()
            raise

    def _keys(self) -> KeyRing:
        cfg = self.config
        keys = KeyRing()
        keys.add_all(cfg.api_keys)
        if cfg.api_keys_file is not None:
            try:
                keys.add_file(cfg.api_keys_file)
            except OSError as exc:
                raise ValueError(f"keys file {cfg.api_keys_file}: {exc.strerror or exc}") from None
        if not len(keys):
            self.generated_keys = generate_keys()
            keys.add_all(self.generated_keys.values())
        return keys

    async def _listen(self) -> None:
        assert self.http is not None
        cfg = self.config
        if cfg.port is not None:
            tcp = await asyncio.start_server(
                self.http.handle, cfg.host, cfg.port, reuse_address=True, backlog=1024
            )
            self._listeners.append(tcp)
            self.port = tcp.sockets[0].getsockname()[1]
        if cfg.socket_path:
            path = os.path.abspath(cfg.socket_path)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            _clear_stale_socket(path)
            # made 0600 from the start (no moment where others could connect):
            # the wire has no authentication, the socket's mode is its access control
            # (the umask only around the bind, which does not yield)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            old_umask = os.umask(0o177)
            try:
                sock.bind(path)
            except BaseException:
                sock.close()
                raise
            finally:
                os.umask(old_umask)
            os.chmod(path, 0o600)
            unix = await asyncio.start_unix_server(self.http.handle, sock=sock, backlog=1024)
            self._listeners.append(unix)
            self.socket_path = path
            self._socket_inode = os.stat(path).st_ino

    def health(self) -> dict[str, Any]:
        assert self.service is not None, "server not started"
        return self.service.health()

    def drain(self) -> None:
        """Refuse new work now; stop once admitted work has finished."""
        if self.service is None or self._drain_task is not None:
            return
        self.service.begin_drain()
        if self.http is not None:
            self.http.begin_drain()
        log.warning("draining: new work is refused; stopping once in-flight work finishes")
        self._drain_task = asyncio.get_running_loop().create_task(self._drain_then_stop())

    async def _drain_then_stop(self) -> None:
        assert self.service is not None
        await self.service.wait_idle()
        if self.http is not None:
            await self.http.wait_clients_leave(self.config.drain_linger_s)
        await self.stop()

    async def stop(self) -> None:
        """Stop listening, let answers being written finish (bounded), tear
        everything down. Idempotent; concurrent callers wait for one stop."""
        if self._stopping is None:
            self._stopping = asyncio.ensure_future(self._teardown())
        await asyncio.shield(self._stopping)

    async def _teardown(self) -> None:
        try:
            if self.service is not None:
                self.service.begin_drain()
            for listener in self._listeners:
                listener.close()
            if self.http is not None:
                await self.http.close_connections(self.config.stop_grace_s)
            for listener in self._listeners:
                with contextlib.suppress(Exception):
                    await listener.wait_closed()
            self._listeners.clear()
            if self.gateway is not None:
                await self.gateway.close()
            if self.service is not None:
                await self.service.close()
            elif self._engine is not None:
                await self._engine.close()
        finally:
            self._remove_socket_file()
            self._stopped.set()

    def _remove_socket_file(self) -> None:
        if self.socket_path and self._socket_inode is not None:
            with contextlib.suppress(FileNotFoundError):
                if os.stat(self.socket_path).st_ino == self._socket_inode:
                    os.unlink(self.socket_path)
            self._socket_inode = None

    async def wait_stopped(self) -> None:
        await self._stopped.wait()

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()
