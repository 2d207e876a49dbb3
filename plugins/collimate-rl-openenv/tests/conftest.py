"""Shared fixtures of the OpenEnv adapter's tests: which OpenEnv line is
installed, a real local backend (TCP and a unix socket) whose templates
include the code environment's server and small test apps, and a look at
the process table."""

from __future__ import annotations

import functools
import importlib.metadata
import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from collimate_rl.local_backend import LocalCollimateBackend


def _openenv_line() -> str | None:
    for dist, line in (("openenv", "0.10"), ("openenv-core", "0.3")):
        try:
            importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
        return line
    return None


#: "0.10" (openenv: sync + async clients) or "0.3" (openenv-core: async only).
OPENENV_LINE = _openenv_line()

# A server answering every GET with its OE_T_* variables (JSON), any path.
_ENV_ECHO = """
import http.server, json, os, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({k: v for k, v in os.environ.items() if k.startswith("OE_T_")})
        self.send_response(200); self.end_headers(); self.wfile.write(body.encode())
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""
_ECHO_CMD = f"{shlex.quote(sys.executable)} -c {shlex.quote(_ENV_ECHO)} {{port}}"
TEST_TEMPLATES = [
    {"id": "oe-echo", "kind": "app", "command": _ECHO_CMD, "ports": [8000], "ready_http": "/"},
    {
        "id": "oe-echo-warm",
        "kind": "app",
        "command": _ECHO_CMD,
        "ports": [8000],
        "ready_http": "/",
        "warm_pool": 1,
    },
    {
        # /health answers 404: never ready for OpenEnv
        "id": "oe-no-health",
        "kind": "app",
        "command": f"{shlex.quote(sys.executable)} -m http.server {{port}} --bind 127.0.0.1",
        "ports": [8000],
        "ready_http": "/",
    },
]


@pytest.fixture(scope="session")
def openenv_line() -> str:
    """The installed OpenEnv line; the test is skipped without one."""
    if OPENENV_LINE is None:
        pytest.skip("neither openenv nor openenv-core is installed")
    return OPENENV_LINE


@pytest.fixture(scope="session")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCollimateBackend]:
    """One real backend for the session, on loopback TCP and a unix socket."""
    sock = tmp_path_factory.mktemp("oe-backend") / "serve.sock"
    with LocalCollimateBackend(templates=TEST_TEMPLATES, socket_path=sock) as b:
        yield b


@pytest.fixture(params=["tcp", "unix"])
def target(request: pytest.FixtureRequest, backend: LocalCollimateBackend) -> str:
    """The backend as a provider's target, over each transport."""
    if request.param == "unix":
        return f"unix:{backend.socket_path}"
    return backend.base_url


@pytest.fixture
def server_pids(backend: LocalCollimateBackend) -> Any:
    """``server_pids(module="collimate_code.server")``: see
    :func:`server_processes`; only the servers this session's backend started
    (they grade at its URL), so another test run on the machine does not count."""
    marker = f"COLLIMATE_SERVE_URL={backend.base_url}".encode()
    return functools.partial(server_processes, marker=marker)


def server_processes(
    module: str = "collimate_code.server", marker: bytes | None = None
) -> list[int]:
    """Pids of live processes whose command line runs ``module`` (clones of
    every namespace show in the host's /proc) and, with ``marker``, whose
    environment holds it (a ``NAME=value`` entry)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0") if marker else []
        except OSError:
            continue
        if state == "Z" or module.encode() not in cmdline:
            continue
        if marker is None or marker in environ:
            found.append(int(entry))
    return found
