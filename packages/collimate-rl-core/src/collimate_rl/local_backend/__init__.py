"""The local backend: a daemon-wire server on this machine.

What the demo, the tests and the benchmarks run on. Start it with
``collimate serve`` / ``python -m collimate_rl.local_backend --port 8080``,
or in process::

    from collimate_rl.local_backend import LocalCollimateBackend
    with LocalCollimateBackend() as backend:
        ...  # backend.base_url, backend.socket_path

The isolation in force is stated at start and in ``/v1/health``; in
``process`` mode this is NOT a sandbox.
"""

from __future__ import annotations

from .cli import main
from .config import ServerConfig
from .embedded import LocalCollimateBackend
from .server import BackendServer
from .templates import TemplateConfigError

__all__ = ["BackendServer", "LocalCollimateBackend", "ServerConfig", "TemplateConfigError", "main"]
