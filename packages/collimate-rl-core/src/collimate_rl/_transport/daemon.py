"""What the blocking and async daemon clients share: the routes, described
once, and the configuration and constructors of both (``DaemonClientBase``).

The clients themselves are ``collimate_rl/client/_async.py`` (written) and
``collimate_rl/client/_sync.py`` (generated from it); the public module is
``collimate_rl.client``.
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ..__about__ import __version__
from ..retry import RetryPolicy
from .calls import Call, delete, exec_call, exec_once_request, get, post
from .calls import segment as _seg
from .pool import HttpSettings

__all__ = [
    "DEFAULT_BASE_URL",
    "SESSION_SOCKET",
    "IMAGES_ON_DAEMON",
    "DaemonClientBase",
    "create_session",
    "delete_session",
    "exec_once",
    "get_session",
    "health",
    "judge",
    "list_sessions",
    "session_exec",
]

#: Where a node-local daemon listens by default.
DEFAULT_BASE_URL = "http://127.0.0.1:8080"
#: The in-pod SESSION socket (the ADMIN socket ``/run/collimate/serve.sock``
#: is for node agents, never for workloads).
SESSION_SOCKET = "/run/collimate-session/serve.sock"

_USER_AGENT = f"collimate-rl/{__version__}"

IMAGES_ON_DAEMON = (
    "the image catalog is a gateway feature: a node-local daemon serves only the "
    "templates it was started with (see templates()). To browse the catalog, use "
    "GatewayClient(api_key='col_...') or connect(api_key='col_...') "
    "(or set COLLIMATE_API_KEY and call connect())."
)

_C = TypeVar("_C", bound="DaemonClientBase")


# --- the daemon routes, described once -------------------------------------


def health() -> Call:
    return get("/v1/health")


def list_sessions() -> Call:
    return get("/v1/sessions")


def create_session(
    template_id: str, egress: Mapping[str, Any] | None, env: Mapping[str, str] | None = None
) -> Call:
    body: dict[str, Any] = {"template_id": template_id}
    if egress is not None:
        body["egress"] = dict(egress)
    if env:
        body["env"] = dict(env) if isinstance(env, Mapping) else env  # the server checks it
    return post("/v1/sessions", body, idempotent=False)


def get_session(session_id: str) -> Call:
    return get(f"/v1/sessions/{_seg(session_id)}")


def delete_session(session_id: str) -> Call:
    return delete(
        f"/v1/sessions/{_seg(session_id)}",
        if_missing={"deleted": False, "session_id": session_id},
    )


def session_exec(session_id: str, body: Mapping[str, Any], client_timeout: float) -> Call:
    return exec_call(f"/v1/sessions/{_seg(session_id)}/exec", body, client_timeout)


def exec_once(
    template_id: str,
    body: Mapping[str, Any],
    egress: Mapping[str, Any] | None,
    client_timeout: float,
) -> Call:
    """Fork, run and discard, in one request."""
    return exec_call("/v1/exec", exec_once_request(template_id, body, egress), client_timeout)


#: How long a judge request may take to answer at least: a group's compiles
#: and tests, on a busy machine.
JUDGE_READ_TIMEOUT_S = 900.0


def judge(
    problems: Sequence[Mapping[str, Any]],
    candidates: Sequence[Mapping[str, Any]],
    client_timeout: float,
) -> Call:
    # idempotent: judging changes nothing on the server (a rerun finds the
    # builds in its compile cache)
    return post(
        "/v1/judge",
        {"problems": [dict(p) for p in problems], "candidates": [dict(c) for c in candidates]},
        idempotent=True,
        read_timeout=max(client_timeout, JUDGE_READ_TIMEOUT_S),
    )


# --- shared configuration ---------------------------------------------------


class DaemonClientBase:
    """Configuration and constructors shared by the sync and async clients."""

    _wire_name = "daemon"

    if TYPE_CHECKING:  # each client's own, public, signature

        def __init__(self, *args: Any, **kwargs: Any) -> None: ...

    def _configure(
        self,
        base_url: str,
        timeout: float,
        retries: int,
        backoff: float,
        retry_budget: float,
        unix_socket: str | None,
        rng: random.Random | None,
        httpx_transport: Any,
        headers: Mapping[str, str] | None,
    ) -> None:
        """Settle what the clients' constructors were given (their signature,
        with its defaults, is the public one: this takes every value as is)."""
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
            headers={"User-Agent": _USER_AGENT, **(headers or {})},
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
