"""Clients meet real processes and real sockets: keep-alive pooling over TCP
and a unix socket, pickling into another interpreter, use after ``os.fork``,
and an async client reused across event loops."""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import subprocess
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from collimate_rl import (
    AsyncCollimateClient,
    AsyncGatewayClient,
    CollimateClient,
    GatewayClient,
    connect,
)
from collimate_rl.testing import FakeDaemon, FakeGateway, serve_tcp, serve_unix


@pytest.fixture(scope="module")
def daemon() -> Iterator[FakeDaemon]:
    with FakeDaemon() as d:
        yield d


@pytest.fixture
def tcp(daemon: FakeDaemon) -> Iterator[tuple[str, list[int]]]:
    connections: list[int] = []
    with serve_tcp(daemon.handle, connections=connections) as url:
        yield url, connections


@pytest.fixture
def unix(daemon: FakeDaemon) -> Iterator[tuple[str, list[int]]]:
    connections: list[int] = []
    with serve_unix(daemon.handle, connections=connections) as path:
        yield path, connections


def test_connections_are_pooled_over_tcp(tcp: tuple[str, list[int]]) -> None:
    url, connections = tcp
    with CollimateClient(url) as client:
        for _ in range(10):
            assert client.health()["status"] == "ok"
        sid = client.create_session("shell")["session_id"]
        client.session_exec(sid, command="true")
        client.delete_session(sid)
    assert len(connections) == 1


def test_connections_are_pooled_over_a_unix_socket(unix: tuple[str, list[int]]) -> None:
    path, connections = unix
    with connect(unix_socket=path) as client:
        for _ in range(10):
            client.exec_once("shell", command="echo pooled")
    assert len(connections) == 1


def test_async_connections_are_pooled_over_tcp(tcp: tuple[str, list[int]]) -> None:
    """One connection per request in flight, reused by the next request:
    sequential calls share one connection; a burst of 8 concurrent calls,
    repeated 5 times, opens at most 8 (a pool that churned would open ~40)."""
    url, connections = tcp

    async def run() -> None:
        async with AsyncCollimateClient(url) as client:
            for _ in range(5):
                assert (await client.health())["status"] == "ok"
            assert len(connections) == 1
            for _ in range(5):
                answers = await asyncio.gather(*(client.health() for _ in range(8)))
                assert all(a["status"] == "ok" for a in answers)

    asyncio.run(run())
    assert 1 < len(connections) <= 8


def test_async_connections_are_pooled_over_a_unix_socket(unix: tuple[str, list[int]]) -> None:
    path, connections = unix

    async def run() -> None:
        async with AsyncCollimateClient(unix_socket=path) as client:
            for _ in range(5):
                await client.exec_once("shell", command="echo pooled")

    asyncio.run(run())
    assert len(connections) == 1


def test_unix_socket_errors_are_clear_and_retried_safely(tmp_path: Any) -> None:
    missing = str(tmp_path / "nobody-listens.sock")
    sleeps: list[float] = []
    client = CollimateClient(unix_socket=missing, retries=2, sleep=sleeps.append)
    with pytest.raises(Exception, match="could not connect") as got:
        client.exec_once("shell", command="true")
    assert missing in str(got.value)
    assert len(sleeps) == 2  # nothing was sent, so even the exec was retried


def test_a_pickled_client_reconnects_in_this_process(tcp: tuple[str, list[int]]) -> None:
    url, connections = tcp
    client = CollimateClient(url, timeout=33.0, retries=5)
    client.health()
    clone = pickle.loads(pickle.dumps(client))
    assert (clone.base_url, clone.timeout, clone.retries) == (url, 33.0, 5)
    assert clone.exec_once("shell", command="echo clone")["stdout"] == "clone\n"
    assert client.health()["status"] == "ok"
    assert len(connections) == 2  # the clone opened its own pool
    client.close()
    clone.close()


def test_a_pickled_client_works_in_another_interpreter(tcp: tuple[str, list[int]]) -> None:
    url, _ = tcp
    with CollimateClient(url) as client:
        client.health()  # a live pool that must not travel
        blob = pickle.dumps(client)
    program = (
        "import pickle, sys, json\n"
        "client = pickle.loads(sys.stdin.buffer.read())\n"
        "res = client.exec_once('python', code='print(6*7)')\n"
        "print(json.dumps(res))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], input=blob, capture_output=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout)["stdout"] == "42\n"


def test_a_pickled_gateway_client_keeps_its_key_and_reconnects() -> None:
    with FakeGateway() as fake, serve_tcp(lambda m, p, b: fake.handle(m, p, b, None)) as url:
        gw = GatewayClient("col_ent_k3y", url)
        assert gw.health()["status"] == "ok"
        clone = pickle.loads(pickle.dumps(gw))
        assert (clone.tier, clone.api_key, clone.base_url) == ("ent", "col_ent_k3y", url)
        assert clone.health()["status"] == "ok"
        gw.close()
        clone.close()
        async_gw = AsyncGatewayClient("col_ent_k3y", url)
        assert asyncio.run(async_gw.health())["status"] == "ok"
        restored = pickle.loads(pickle.dumps(async_gw))
        assert asyncio.run(restored.health())["status"] == "ok"


def _fork_and_run(fn: Any) -> tuple[int, Any]:
    """Run ``fn()`` in a forked child; ``(exit status, its JSON result)``."""
    read_fd, write_fd = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with server threads alive
        pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        status = 1
        try:
            os.close(read_fd)
            payload = json.dumps(fn()).encode()
            os.write(write_fd, payload)
            status = 0
        finally:
            os._exit(status)
    os.close(write_fd)
    chunks = []
    while chunk := os.read(read_fd, 65536):
        chunks.append(chunk)
    os.close(read_fd)
    _, wait_status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(wait_status)
    return code, json.loads(b"".join(chunks)) if chunks else None


@pytest.mark.parametrize("socket_kind", ["tcp", "unix"])
def test_a_client_works_after_os_fork(
    socket_kind: str, tcp: tuple[str, list[int]], unix: tuple[str, list[int]]
) -> None:
    where, connections = tcp if socket_kind == "tcp" else unix
    client = CollimateClient(where) if socket_kind == "tcp" else CollimateClient(unix_socket=where)
    sid = client.create_session("python")["session_id"]
    parent_pool = client._http.pool._current()

    def child() -> dict[str, Any]:
        res = client.session_exec(sid, code="import os; print(os.getpid())")
        fresh = client._http.pool._current() is not parent_pool
        return {"stdout": res["stdout"], "fresh_pool": fresh}

    code, result = _fork_and_run(child)
    assert code == 0
    assert result["fresh_pool"] is True
    assert result["stdout"].strip().isdigit()
    # The parent's pooled connection is intact and still its own.
    assert client._http.pool._current() is parent_pool
    assert client.session_exec(sid, command="echo parent")["stdout"] == "parent\n"
    assert client.delete_session(sid)["deleted"] is True
    assert len(connections) == 2  # one per process, no reconnects in the parent
    client.close()


def test_an_async_client_works_after_os_fork(tcp: tuple[str, list[int]]) -> None:
    url, _ = tcp
    client = AsyncCollimateClient(url)

    async def use() -> dict[str, Any]:
        return await client.exec_once("shell", command="echo async")

    loop = asyncio.new_event_loop()
    try:
        assert loop.run_until_complete(use())["stdout"] == "async\n"
        code, result = _fork_and_run(lambda: asyncio.run(use()))
        assert code == 0
        assert result["stdout"] == "async\n"
        assert loop.run_until_complete(use())["stdout"] == "async\n"
        loop.run_until_complete(client.aclose())
    finally:
        loop.close()


def test_an_async_client_survives_a_new_event_loop(tcp: tuple[str, list[int]]) -> None:
    url, connections = tcp
    client = AsyncCollimateClient(url)
    for _ in range(3):  # each asyncio.run is a new loop; sockets of a dead loop are not reused
        assert asyncio.run(client.health())["status"] == "ok"
    assert len(connections) == 3

    async def twice() -> None:
        await client.health()
        await client.health()
        await client.aclose()

    asyncio.run(twice())
    assert len(connections) == 4
