"""The session-surface conformance suite, run by every client flavour here.

Against the in-memory fake daemon over ``httpx.MockTransport`` (both twins),
over a real loopback TCP port and a real unix socket (both twins), and the
gateway clients against the fake gateway. The real local backend runs the
same suite from its own tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from collimate_rl import AsyncCollimateClient, AsyncGatewayClient, CollimateClient, GatewayClient
from collimate_rl.testing import (
    AsyncSessionSurfaceConformance,
    FakeDaemon,
    FakeGateway,
    SessionSurfaceConformance,
    serve_tcp,
    serve_unix,
)

KEY = "col_pro_conformance0000"


@pytest.fixture(scope="module")
def daemon() -> Iterator[FakeDaemon]:
    with FakeDaemon() as d:
        yield d


@pytest.fixture(scope="module")
def tcp_url(daemon: FakeDaemon) -> Iterator[str]:
    with serve_tcp(daemon.handle) as url:
        yield url


@pytest.fixture(scope="module")
def unix_path(daemon: FakeDaemon) -> Iterator[str]:
    with serve_unix(daemon.handle) as path:
        yield path


class _Python:
    @pytest.fixture
    def template_id(self) -> str:
        return "python"


class TestDaemonSyncMock(_Python, SessionSurfaceConformance):
    @pytest.fixture
    def client(self, daemon: FakeDaemon) -> Iterator[Any]:
        with CollimateClient(httpx_transport=daemon.mock_transport()) as c:
            yield c


class TestDaemonAsyncMock(_Python, AsyncSessionSurfaceConformance):
    @pytest.fixture
    def client(self, daemon: FakeDaemon) -> Any:
        return AsyncCollimateClient(httpx_transport=daemon.mock_transport())


class TestDaemonSyncTCP(_Python, SessionSurfaceConformance):
    @pytest.fixture
    def client(self, tcp_url: str) -> Iterator[Any]:
        with CollimateClient(tcp_url) as c:
            yield c


class TestDaemonAsyncUnixSocket(_Python, AsyncSessionSurfaceConformance):
    @pytest.fixture
    def client(self, unix_path: str) -> Any:
        return AsyncCollimateClient(unix_socket=unix_path)


class TestDaemonSyncUnixSocket(_Python, SessionSurfaceConformance):
    @pytest.fixture
    def client(self, unix_path: str) -> Iterator[Any]:
        with CollimateClient.for_node_socket(unix_path) as c:
            yield c


@pytest.fixture(scope="module")
def gateway(daemon: FakeDaemon) -> FakeGateway:
    return FakeGateway(daemon)


class TestGatewaySync(_Python, SessionSurfaceConformance):
    @pytest.fixture
    def client(self, gateway: FakeGateway) -> Iterator[Any]:
        with GatewayClient(
            KEY, "https://gateway.invalid", httpx_transport=gateway.mock_transport()
        ) as c:
            yield c


class TestGatewayAsync(_Python, AsyncSessionSurfaceConformance):
    @pytest.fixture
    def client(self, gateway: FakeGateway) -> Any:
        return AsyncGatewayClient(
            KEY, "https://gateway.invalid", httpx_transport=gateway.mock_transport()
        )
