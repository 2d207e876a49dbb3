"""``CollimateProvider``: OpenEnv's ``ContainerProvider`` over Collimate sessions.

OpenEnv starts an environment server through a provider
(``from_docker_image(image, provider=...)``, ``AutoEnv.from_env(name,
container_provider=...)``) and talks to it over ``/ws``. This provider starts
a *session* of the app template the image names instead of a container: the
session's clone runs the server, and its endpoint is the base URL OpenEnv
connects to. ``stop_container`` deletes the session, which kills the server
with everything it started.

A provider runs one server at a time, as OpenEnv's own providers do (the
client stops it with ``stop_container()``, which names no container): make
one provider per environment client. Providers built from one client share
its connections.
"""

from __future__ import annotations

import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from collimate_rl import CollimateClient, SessionClient, connect
from openenv.core.containers.runtime import ContainerProvider

from .images import image_to_template

__all__ = ["CollimateProvider"]

log = logging.getLogger(__name__)

#: OpenEnv servers listen on 8000 in their images; preferred when a template
#: exposes several ports and the caller named none.
OPENENV_PORT = 8000
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


#: How long the provider's client waits for a session create (its server's
#: start), unless ``timeout=`` says otherwise.
START_TIMEOUT_S = 360.0


class CollimateProvider(ContainerProvider):  # type: ignore[misc]
    """Start OpenEnv environment servers as Collimate sessions.

    ``target``: where sessions are made: a daemon URL, ``"unix:/path"`` for a
    daemon's socket, or ``None`` for ``connect()``'s environment resolution
    (``$COLLIMATE_SERVE_SOCKET``, ``$COLLIMATE_API_KEY``, ...). Or pass a
    ready ``client`` (either wire), which the provider never closes.
    ``template_for_image`` maps an image to a template id (default:
    :func:`~collimate_rl.openenv.image_to_template`). ``env_vars`` are
    passed to every server this provider starts, under the ``env_vars`` of
    each start. ``client_kwargs`` go to ``connect`` (``timeout``, ...).
    """

    def __init__(
        self,
        target: str | None = None,
        *,
        client: SessionClient | None = None,
        template_for_image: Callable[[str], str] | None = None,
        env_vars: Mapping[str, str] | None = None,
        ready_path: str = "/health",
        **client_kwargs: Any,
    ) -> None:
        if client is not None and (target is not None or client_kwargs):
            raise ValueError("pass either client= or target (with connect() kwargs), not both")
        self._target = target
        # a session of an app template is answered once its server is ready:
        # with many servers importing OpenEnv at once, minutes (the
        # template's own ready timeout is 300 s); the client waits longer
        self._client_kwargs = {"timeout": START_TIMEOUT_S, **client_kwargs}
        self._client: SessionClient | None = client
        self._owns_client = client is None
        self._template_for_image = template_for_image or image_to_template
        self._env_vars = _checked_env(env_vars, "env_vars")
        self._ready_path = ready_path
        self._lock = threading.Lock()
        self._session_id: str | None = None
        self._base_url: str | None = None
        self._wait_timeout_s: float | None = None

    # -- the client ---------------------------------------------------------

    @property
    def client(self) -> SessionClient:
        """The Collimate client sessions are made with (made on first use)."""
        with self._lock:
            if self._client is None:
                self._client = self._connect()
            return self._client

    def _connect(self) -> SessionClient:
        target = self._target
        if target is not None and target.startswith("unix:"):
            return connect(unix_socket=target[len("unix:") :], **self._client_kwargs)
        return connect(target, **self._client_kwargs)

    @property
    def session_id(self) -> str | None:
        """The session running this provider's server, if one runs."""
        return self._session_id

    @property
    def base_url(self) -> str | None:
        return self._base_url

    # -- ContainerProvider ---------------------------------------------------

    def start_container(
        self,
        image: str,
        port: int | None = None,
        env_vars: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> str:
        """Start a session of the template ``image`` names; return its base URL.

        ``port`` picks which exposed guest port to connect to (default: 8000
        when exposed, else the only or lowest one). ``env_vars`` reach the
        server when the template starts one for the session, else the start
        is refused: they are never dropped. ``wait_timeout`` (passed through
        by ``AutoEnv``) bounds :meth:`wait_for_ready`; other keyword
        arguments meant for Docker are accepted and have no meaning here."""
        if self._session_id is not None:
            raise RuntimeError(
                f"this CollimateProvider already runs session {self._session_id} "
                f"({self._base_url}); a provider runs one server at a time, as OpenEnv's "
                "providers do: use one provider per environment client"
            )
        template = self._template_for_image(image)
        env = {**self._env_vars, **_checked_env(env_vars, "env_vars")}
        wait_timeout = kwargs.pop("wait_timeout", None)
        if wait_timeout is not None:
            self._wait_timeout_s = float(wait_timeout)
        if kwargs:
            log.debug("CollimateProvider: ignoring Docker options %s", sorted(kwargs))
        client = self.client
        created = self._create(client, template, env)
        sid = str(created["session_id"])
        try:
            if env and sorted(created.get("env") or []) != sorted(env):
                raise RuntimeError(
                    f"the server did not confirm env_vars {sorted(env)} for template "
                    f"{template!r} (it answered {created.get('env')!r}); refusing to run "
                    "the environment without them"
                )
            self._base_url = _endpoint(created, template, port)
        except BaseException:
            client.delete_session(sid)
            raise
        self._session_id = sid
        return self._base_url

    def _create(self, client: SessionClient, template: str, env: dict[str, str]) -> dict[str, Any]:
        if not env:
            return client.create_session(template)
        if not isinstance(client, CollimateClient):
            raise ValueError(
                f"env_vars {sorted(env)} cannot reach a server of template {template!r} over "
                f"{type(client).__name__}: a gateway sandbox forks a baked template whose "
                "server is already running; bake them into the template (ReadySpec env) "
                "or use a daemon whose app template starts a server per session"
            )
        return client.create_session(template, env=env)

    def wait_for_ready(self, base_url: str, timeout_s: float = 30.0) -> None:
        """Poll ``GET {base_url}/health`` until it answers 200; ``TimeoutError``
        after ``timeout_s`` (or the ``wait_timeout`` given at start, if longer)."""
        if self._wait_timeout_s is not None:
            timeout_s = max(timeout_s, self._wait_timeout_s)
        url = base_url.rstrip("/") + self._ready_path
        deadline = time.monotonic() + timeout_s
        last: object = None
        while True:
            try:
                with _NO_PROXY.open(url, timeout=5.0) as resp:  # loopback endpoints
                    if resp.status == 200:
                        return
                    last = f"HTTP {resp.status}"
            except urllib.error.HTTPError as exc:
                last = f"HTTP {exc.code}"
            except OSError as exc:
                last = exc
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"{url} not ready within {timeout_s:g}s (last: {last}); session "
                    f"{self._session_id}"
                )
            time.sleep(0.1)

    def stop_container(self) -> None:
        """Delete the session (its server and everything it started die with
        it). Does nothing when none runs; safe to call twice."""
        sid = self._session_id
        if sid is None:
            return
        self.client.delete_session(sid)  # never raises because it was already gone
        self._session_id = None
        self._base_url = None

    def close(self) -> None:
        """Stop the server, if one runs, and close the client the provider made."""
        try:
            self.stop_container()
        finally:
            with self._lock:
                client, self._client = self._client, None
            if client is not None and self._owns_client:
                client.close()

    # openenv 0.10's base class has these; openenv-core 0.3's has not
    def __enter__(self) -> CollimateProvider:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = self._target if self._owns_client else repr(self._client)
        return f"CollimateProvider({where!r}, session={self._session_id!r})"


def _checked_env(env: Mapping[str, str] | None, what: str) -> dict[str, str]:
    if env is None:
        return {}
    if not isinstance(env, Mapping):
        raise TypeError(f"{what} must be a mapping of name -> string, got {type(env).__name__}")
    for name, value in env.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError(f"{what}: {name!r} -> {value!r}: names and values must be strings")
    return dict(env)


def _endpoint(created: Mapping[str, Any], template: str, port: int | None) -> str:
    endpoints = created.get("endpoints") or {}
    if not endpoints:
        raise RuntimeError(
            f"template {template!r} exposes no port (no endpoints in its session): an "
            "OpenEnv server needs an app template (kind = 'app', with ports)"
        )
    if port is not None:
        if str(port) not in endpoints:
            raise ValueError(
                f"port {port} is not exposed by template {template!r}; it exposes "
                f"{sorted(endpoints, key=int)}"
            )
        hostport = endpoints[str(port)]
    elif str(OPENENV_PORT) in endpoints:
        hostport = endpoints[str(OPENENV_PORT)]
    else:
        hostport = endpoints[min(endpoints, key=int)]
    return f"http://{hostport}"
