"""A pytest plugin, loaded into SandboxFusion's own test run (``-p
sandbox_fusion_redirect``, by its venv's interpreter), that points its
runner tests at another server instead of its app.

Each of its ``sandbox/tests/runners/test_*.py`` makes ``client =
TestClient(app)`` at import, ``app`` from ``sandbox.server.server``, and
posts JSON to ``/run_code`` or ``/run_jupyter``. Before those modules are
collected this plugin replaces ``fastapi.testclient.TestClient`` with an
httpx client on ``$COLLIMATE_SF_TARGET`` (the same paths, the same JSON)
and ``sandbox.server.server`` with a module whose ``app`` is nothing: its
server (datasets, databases) is never imported, so nothing of
SandboxFusion's own runs but its request and response models and the
tests' assertions.

Read by ``sandbox_fusion_suite.py``; it runs under SandboxFusion's
interpreter, so it imports nothing of collimate-rl.
"""

from __future__ import annotations

import os
import sys
import types
from typing import Any

import httpx

#: The server the requests go to (``http://127.0.0.1:PORT``).
TARGET_ENV = "COLLIMATE_SF_TARGET"


class RedirectedClient(httpx.Client):
    """What ``TestClient(app)`` becomes: the app is ignored, every request
    goes to the target (generous timeout: a test's run may take its whole
    ``run_timeout`` on a busy machine)."""

    def __init__(self, app: Any = None, *args: Any, **kwargs: Any) -> None:
        super().__init__(base_url=os.environ[TARGET_ENV], timeout=600)


def pytest_configure(config: Any) -> None:
    import fastapi.testclient

    fastapi.testclient.TestClient = RedirectedClient  # type: ignore[misc,assignment]
    server = types.ModuleType("sandbox.server.server")
    server.app = None  # type: ignore[attr-defined]
    sys.modules["sandbox.server.server"] = server
