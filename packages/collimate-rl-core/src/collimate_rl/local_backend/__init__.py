"""The local backend: a daemon-wire and gateway-wire server on this machine.

What the demo, the tests and the benchmarks run on. Start it with
``collimate serve`` / ``python -m collimate_rl.local_backend --port 8080``,
or in process::

    from collimate_rl.local_backend import LocalCollimateBackend
    with LocalCollimateBackend() as backend:       # also `async with`
        ...  # backend.base_url, backend.socket_path, backend.health()

Flags (each also a keyword of ``LocalCollimateBackend``): ``--host``
(loopback by default), ``--port`` (8080; 0 = a free port), ``--socket PATH``
(a unix socket, alone or next to TCP), ``--templates FILE`` (TOML, see
:mod:`.templates`; ``--override-templates`` lets it replace built-ins),
``--isolation auto|namespaces|process``, ``--max-inflight N`` (execs and
creates in flight before 503 ``at_capacity``; 0 = unlimited),
``--session-ttl S`` (idle sessions are reaped after S seconds and answer 410
``session_gone`` for a while, then 404).

The gateway wire (Bearer ``col_*`` keys, see :mod:`.gateway_wire`) is served
on the same ports: ``--api-key KEY`` (repeatable), ``--api-keys-file FILE``,
or, with neither, a demo and a pro key generated and printed once at start
(``LocalCollimateBackend.generated_keys`` in process); ``--no-gateway`` turns
it off.

Honesty rules:

* the isolation in force is printed at start and reported by
  ``/v1/health`` (``isolation``, ``isolation_detail``, ``sandbox``); in
  ``process`` mode this is NOT a sandbox and the banner says so;
* egress: a policy on a non-networked template is refused (400 ``template is
  vsock-only``); ``open`` and ``none`` are enforced; an ``allowlist`` is
  enforced fail-closed as ``none`` (the response's ``egress`` field says so);
  a ``denylist`` / ``preset`` cannot be enforced here and is refused with 400
  rather than run open.

Drain: SIGTERM, a first Ctrl-C, ``POST /v1/admin/drain`` (loopback and unix
socket clients only) or ``LocalCollimateBackend.drain()``: health says
``draining``, new work gets 503 ``draining``, in-flight execs finish, then the
server stops and removes every clone, its socket file and its port.

For the plugins that run graders of their own (the Ray plugin): ``main`` (the
``collimate serve`` command line), ``is_loopback`` (whether a host is this
machine only), and the cluster secret's ``SECRET_HEADER`` (the header a
client sends it in) and ``SECRET_FILE_ENV`` (the variable naming the file a
grader reads it from; see :mod:`.cluster_secret`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cli import main
    from .cluster_secret import SECRET_FILE_ENV, SECRET_HEADER
    from .config import ServerConfig, is_loopback
    from .embedded import LocalCollimateBackend
    from .server import BackendServer
    from .templates import TemplateConfigError

__all__ = [
    "SECRET_FILE_ENV",
    "SECRET_HEADER",
    "BackendServer",
    "LocalCollimateBackend",
    "ServerConfig",
    "TemplateConfigError",
    "is_loopback",
    "main",
]

# Imported on first use: the plugin manager imports `.builtin_templates` at
# start-up, and that must not drag in the server, h11 and the engine.
_LAZY = {
    "main": ".cli",
    "SECRET_FILE_ENV": ".cluster_secret",
    "SECRET_HEADER": ".cluster_secret",
    "ServerConfig": ".config",
    "is_loopback": ".config",
    "LocalCollimateBackend": ".embedded",
    "BackendServer": ".server",
    "TemplateConfigError": ".templates",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
