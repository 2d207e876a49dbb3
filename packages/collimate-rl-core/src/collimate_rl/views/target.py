"""What a view runs against: the embedded local backend (the default, as
``python -m collimate_rl.demo``), or a daemon / the gateway named by the
flags ``connect()`` takes.

:func:`open_target` starts the embedded backend when no target flag is
given and always stops it on the way out; it also knows where the
server's ``GET /v1/stats`` counters are, for the views that read them.
"""

from __future__ import annotations

import argparse
import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..transport import SessionClient, connect

__all__ = ["DEFAULT_TEMPLATE", "SessionLedger", "Target", "add_target_options", "open_target"]

#: The python template of the local backend, under the real daemon's name.
DEFAULT_TEMPLATE = "dkr-python311"


def add_target_options(p: argparse.ArgumentParser, *, transport: bool = True) -> None:
    """The target flags (none: the embedded local backend)."""
    g = p.add_argument_group(
        "target (default: an embedded local backend, started and stopped here)"
    )
    g.add_argument("--url", help="a daemon's URL (the gateway's origin, with --api-key)")
    g.add_argument("--socket", help="a daemon's unix socket")
    g.add_argument("--api-key", help="a col_* key: the gateway (at --url, else the default origin)")
    if transport:
        g.add_argument("--transport", help="a transport a plugin registered, by name")
    g.add_argument(
        "--isolation",
        default="auto",
        choices=("auto", "namespaces", "process"),
        help="the embedded backend's isolation (auto: namespaces when this host allows)",
    )
    p.add_argument(
        "--plain", action="store_true", help="plain lines, no live view (also: NO_COLOR, no tty)"
    )


def uses_embedded(args: argparse.Namespace) -> bool:
    """No target flag was given: the view starts its own backend."""
    return not any(getattr(args, k, None) for k in ("url", "socket", "api_key", "transport"))


@dataclass
class Target:
    """A connected backend: its session client, a line saying what it is,
    and where its counters are (``base_url`` / ``unix_socket`` / ``api_key``)."""

    client: SessionClient
    where: str
    base_url: str | None = None
    unix_socket: str | None = None
    api_key: str | None = None
    #: the embedded backend's generated keys (``{"demo", "pro"}``), else empty
    keys: dict[str, str] = field(default_factory=dict)

    def gateway(self) -> Any:
        """A gateway client for this target (the embedded backend's with its
        generated pro key), or None for a daemon."""
        from ..gateway import GatewayClient

        if isinstance(self.client, GatewayClient):
            return self.client
        key = self.keys.get("pro")
        if key and self.base_url:
            return GatewayClient(api_key=key, base_url=self.base_url)
        return None

    def stats(self) -> dict[str, Any] | None:
        """The server's ``GET /v1/stats`` counters, or None when it has none
        (a server that predates the route, or a transport without a URL)."""
        import httpx

        if self.base_url is None and self.unix_socket is None:
            return None
        transport = httpx.HTTPTransport(uds=self.unix_socket) if self.unix_socket else None
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        base = self.base_url or "http://localhost"
        try:
            with httpx.Client(transport=transport, timeout=10.0, headers=headers) as http:
                resp = http.get(base.rstrip("/") + "/v1/stats")
        except httpx.HTTPError:
            return None
        if resp.status_code != 200:
            return None
        body = resp.json()
        return body if isinstance(body, dict) else None


@contextlib.contextmanager
def open_target(args: argparse.Namespace) -> Iterator[Target]:
    """The target ``args`` name; an embedded backend is stopped on exit."""
    if not uses_embedded(args):
        client = connect(
            args.url,
            api_key=args.api_key,
            unix_socket=args.socket,
            transport=getattr(args, "transport", None),
        )
        with contextlib.closing(client):
            what = "gateway" if args.api_key else "daemon"
            yield Target(
                client,
                f"{what}: {args.url or args.socket or args.transport or 'default origin'}",
                base_url=args.url,
                unix_socket=args.socket,
                api_key=args.api_key,
            )
        return
    from ..local_backend import LocalCollimateBackend

    with LocalCollimateBackend(isolation=args.isolation) as backend:
        health = backend.health()
        isolation = health.get("isolation", "?")
        with contextlib.closing(connect(backend.base_url)) as client:
            yield Target(
                client,
                f"embedded local backend ({isolation})",
                base_url=backend.base_url,
                keys=backend.generated_keys,
            )


class SessionLedger:
    """The sandboxes a view created and has not deleted yet, so that an
    interrupted view deletes every one of them before it exits."""

    def __init__(self, client: SessionClient) -> None:
        self.client = client
        self._lock = threading.Lock()
        self._live: set[str] = set()

    def create(self, template: str) -> dict[str, Any]:
        made = self.client.create_session(template)
        with self._lock:
            self._live.add(str(made["session_id"]))
        return made

    def delete(self, session_id: str) -> None:
        self.client.delete_session(session_id)
        with self._lock:
            self._live.discard(session_id)

    @property
    def live(self) -> int:
        with self._lock:
            return len(self._live)

    def delete_all(self) -> int:
        """Delete every sandbox still live; how many there were."""
        with self._lock:
            left = sorted(self._live)
        for sid in left:
            with contextlib.suppress(Exception):
                self.delete(sid)
        return len(left)
