"""Settings of one local backend server, shared by the CLI and the
in-process :class:`~.embedded.LocalCollimateBackend`."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

IsolationSetting = Literal["auto", "namespaces", "process"]

DEFAULT_MAX_INFLIGHT = 64
DEFAULT_SESSION_TTL_S = 600.0
DEFAULT_TOMBSTONE_TTL_S = 600.0
DEFAULT_KERNEL_TTL_S = 1800.0


@dataclass
class ServerConfig:
    """Where to listen and how to run.

    ``port=None`` with a ``socket_path`` listens on the unix socket only; a
    port and a socket listen on both. ``port=0`` picks a free port.
    ``max_inflight=0`` disables load shedding; ``session_ttl=0`` disables
    idle reaping; ``kernel_ttl`` reaps the kernels (``Sandbox.kernel()``)
    of a session that ran no exec that long, and 0 keeps them.
    """

    host: str = "127.0.0.1"
    # a TCP bind other than loopback must be asked for: the daemon wire has no
    # authentication, so anyone who reaches the port can run code here
    allow_non_loopback: bool = False
    port: int | None = 0
    socket_path: str | None = None
    templates_file: str | Path | None = None
    templates: Any = None  # in-process tables / TemplateSpecs / {id: table}
    use_plugins: bool = True
    override_templates: bool = False
    isolation: IsolationSetting = "auto"
    max_inflight: int = DEFAULT_MAX_INFLIGHT
    # one-shots running at once, the rest queued (see run_queue); None: one
    # per CPU, 0: no pacing
    run_slots: int | None = None
    session_ttl: float = DEFAULT_SESSION_TTL_S
    tombstone_ttl: float = DEFAULT_TOMBSTONE_TTL_S
    kernel_ttl: float = DEFAULT_KERNEL_TTL_S
    max_body_bytes: int = 64 * 1024 * 1024
    idle_connection_timeout_s: float = 300.0  # keep-alive connections idle this long are closed
    # A stop lets answers already being written finish for this long, then cuts
    # the connections: their execs are cancelled and their clones killed. (A
    # drain waits for in-flight work BEFORE stopping, so this is only writes.)
    stop_grace_s: float = 1.0
    # A drain, once admitted work is done, waits this long at most for
    # clients to close their keep-alive connections (each request on one is
    # answered ``draining``, then the connection ends) before stopping: an
    # idle connection closed under a client writing a request would leave it
    # unable to tell whether its exec ran.
    drain_linger_s: float = 2.0
    # The gateway wire (Bearer col_* keys) beside the daemon wire. With no
    # keys and no keys file, a demo and a pro key are generated at start.
    gateway: bool = True
    api_keys: tuple[str, ...] = ()
    api_keys_file: str | Path | None = None
    # ready clones a baked template keeps warm on this node, at most
    gateway_max_warm: int = 4
    # The cluster's shared secret (see .cluster_secret): when set, every
    # request must carry it. Kept out of the repr, so never logged.
    cluster_secret: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.isolation not in ("auto", "namespaces", "process"):
            raise ValueError(
                f"isolation must be auto, namespaces or process, not {self.isolation!r}"
            )
        if self.port is None and not self.socket_path:
            raise ValueError("nothing to listen on: give a port, a socket path, or both")
        if self.port is not None and not 0 <= self.port < 65536:
            raise ValueError(f"port out of range: {self.port}")
        if self.port is not None and not is_loopback(self.host) and not self.allow_non_loopback:
            raise ValueError(
                f"host {self.host!r} is not a loopback address: the daemon wire has no "
                "authentication, so anyone who can reach the port could run code here; "
                "pass --allow-non-loopback (allow_non_loopback=True) if that is really meant"
            )
        if self.max_inflight < 0:
            raise ValueError("max_inflight must be >= 0 (0 = unlimited)")
        if self.run_slots is not None and self.run_slots < 0:
            raise ValueError("run_slots must be >= 0 (0 = no pacing), or None for one per CPU")
        keys: Any = self.api_keys
        if isinstance(keys, str):
            raise ValueError("api_keys must be a list of keys, not one string")
        self.api_keys = tuple(keys)
        if self.cluster_secret is not None and not self.cluster_secret:
            raise ValueError("cluster_secret must not be empty (None: no secret)")
        if self.gateway_max_warm < 0:
            raise ValueError("gateway_max_warm must be >= 0")
        if self.session_ttl < 0 or self.tombstone_ttl < 0 or self.kernel_ttl < 0:
            raise ValueError("TTLs must be >= 0 (0 = off)")


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
