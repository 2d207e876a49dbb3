"""App templates: a real HTTP server started in the clone, readiness probed on
loopback, ``endpoints`` that answer from the host, a warm pool, teardown."""

from __future__ import annotations

import asyncio
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
