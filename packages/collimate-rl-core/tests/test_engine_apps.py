"""App templates: a real HTTP server started in the clone, readiness probed on
loopback, ``endpoints`` that answer from the host, a warm pool, teardown."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import socket
import sys
import urllib.request

import pytest

from collimate_rl.local_backend.engine import (
    CloneDied,
    ExecJob,
    ForkEngine,
    TemplateSpec,
)
from collimate_rl.testing.engine import run_with_engine, started_engine

MODES = ["process", pytest.param("namespaces", marks=pytest.mark.namespaces)]
WEB = TemplateSpec(
    id="web",
    kind="app",
    networked=True,
    app_command=f"{sys.executable} -m http.server {{port}} --bind 127.0.0.1",
    ports=(8000,),
    ready_http="/",
    ready_timeout_s=30.0,
    warm_pool=1,
)


started = functools.partial(started_engine, pool_size=0)
run = functools.partial(run_with_engine, pool_size=0)


def get(url: str) -> int:
    with urllib.request.urlopen(url, timeout=5) as resp:  # loopback only
        return int(resp.status)


def refused(hostport: str) -> bool:
    host, port = hostport.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
    except OSError:
        return True
    return False


@pytest.mark.parametrize("mode", MODES)
def test_app_clone_serves_on_its_endpoint_and_is_gone_after_close(mode: str) -> None:
    async def body(engine: ForkEngine) -> None:
        clone = await engine.open_clone(WEB, egress=None)
        try:
            ((guest, hostport),) = clone.endpoints.items()
            assert guest == "8000" and hostport.startswith("127.0.0.1:")
            status = await asyncio.to_thread(get, f"http://{hostport}/")
            assert status == 200
            # the app clone also takes execs
            out = await clone.run(ExecJob("command", "echo in-app", "ab" * 32, 10.0))
            assert out.output == b"in-app\n"
            other = await engine.open_clone(WEB, egress=None)
            try:
                assert other.endpoints != clone.endpoints  # one port per clone
            finally:
                await other.close()
        finally:
            await clone.close()
        assert refused(hostport)

    run(mode, [WEB], body)


@pytest.mark.parametrize("mode", MODES)
def test_an_app_that_never_gets_ready_fails_bringup_and_leaves_nothing(mode: str) -> None:
    never = TemplateSpec(
        id="never",
        kind="app",
        networked=True,
        app_command="sleep 60 # {port}",
        ports=(9000,),
        ready_http="/",
        ready_timeout_s=1.0,
    )

    async def body(engine: ForkEngine) -> None:
        with pytest.raises(CloneDied, match="not ready"):
            await engine.open_clone(never, egress=None)
        assert not engine._live

    run(mode, [never], body)


@pytest.mark.namespaces
def test_an_app_that_is_not_networked_is_reached_through_a_relay_and_reaches_nothing() -> None:
    """Its server lives in a net namespace of its own: the host reaches it
    on its endpoint (the engine relays into that namespace), it cannot
    reach the host, and its endpoint is gone with it."""
    closed = dataclasses.replace(WEB, id="web-own-net", networked=False)
    host = socket.socket()
    host.bind(("127.0.0.1", 0))
    host.listen(4)
    probe = (
        "import socket\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {host.getsockname()[1]}), timeout=2)\n"
        "    print('reached the host')\n"
        "except OSError as exc:\n"
        "    print('blocked', type(exc).__name__)\n"
    )

    async def body(engine: ForkEngine) -> None:
        clone = await engine.open_clone(closed, egress=None)
        try:
            ((guest, hostport),) = clone.endpoints.items()
            assert guest == "8000" and hostport.startswith("127.0.0.1:")
            for _ in range(3):  # one relayed connection each
                assert await asyncio.to_thread(get, f"http://{hostport}/") == 200
            out = await clone.run(ExecJob("code", probe, "ab" * 32, 10.0))
            assert out.output.decode().startswith("blocked"), out.output
        finally:
            await clone.close()
        assert refused(hostport)

    try:
        run("namespaces", [closed], body)
    finally:
        host.close()
