"""The conformance suite (``collimate_rl.testing``) against the real local
backend: over TCP and the unix socket, with the blocking and the async client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from collimate_rl.client import AsyncCollimateClient, CollimateClient
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.testing import AsyncSessionSurfaceConformance, SessionSurfaceConformance


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCollimateBackend]:
    sock = tmp_path_factory.mktemp("conformance") / "serve.sock"
    with LocalCollimateBackend(socket_path=sock) as b:
        yield b


class _PythonTemplate:
    @pytest.fixture
    def template_id(self) -> str:
        return "py"


class TestLocalBackendTcpSync(_PythonTemplate, SessionSurfaceConformance):
    @pytest.fixture
    def client(self, backend: LocalCollimateBackend) -> Iterator[Any]:
        with CollimateClient(backend.base_url) as c:
            yield c


class TestLocalBackendUnixSync(_PythonTemplate, SessionSurfaceConformance):
    @pytest.fixture
    def client(self, backend: LocalCollimateBackend) -> Iterator[Any]:
        assert backend.socket_path and Path(backend.socket_path).exists()
        with CollimateClient(unix_socket=backend.socket_path) as c:
            yield c


class TestLocalBackendTcpAsync(_PythonTemplate, AsyncSessionSurfaceConformance):
    @pytest.fixture
    def client(self, backend: LocalCollimateBackend) -> Any:
        return AsyncCollimateClient(backend.base_url)


class TestLocalBackendUnixAsync(_PythonTemplate, AsyncSessionSurfaceConformance):
    @pytest.fixture
    def client(self, backend: LocalCollimateBackend) -> Any:
        return AsyncCollimateClient(unix_socket=backend.socket_path)
