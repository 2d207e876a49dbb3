"""200 create / fork / delete cycles on the gateway wire, with errors
injected where the real server cannot make them on demand (a fork's copy
failing, a clone failing to come up), leave no sandbox and no process."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from collimate_rl import GatewayClient
from collimate_rl.errors import GatewayError
from collimate_rl.local_backend import LocalCollimateBackend, gateway_sandboxes
from collimate_rl.local_backend.fork_copy import ForkCopyError
from collimate_rl.local_backend.freeze import descendants

KEY = "col_pro_leaks_tenant"
CYCLES = 200


class Faults:
    """Every ``every``-th call of a coroutine function fails instead."""

    def __init__(self, real: Any, every: int, exc: Exception) -> None:
        self.real, self.every, self.exc = real, every, exc
        self.calls = self.injected = 0

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if self.calls % self.every == 0:
            self.injected += 1
            raise self.exc
        return await self.real(*args, **kwargs)


@pytest.fixture
def backend() -> Iterator[LocalCollimateBackend]:
    with LocalCollimateBackend(api_keys=[KEY], gateway_max_warm=0) as b:
        yield b


@pytest.mark.slow
def test_cycles_with_injected_errors_leave_nothing_behind(
    backend: LocalCollimateBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = set(descendants(os.getpid()))
    service = backend.server.service
    assert service is not None
    engine: Any = service.engine
    copy_faults = Faults(gateway_sandboxes.copy_state, 3, ForkCopyError("injected copy failure"))
    open_faults = Faults(engine.open_clone, 13, OSError("injected bring-up failure"))
    monkeypatch.setattr(gateway_sandboxes, "copy_state", copy_faults)
    monkeypatch.setattr(engine, "open_clone", open_faults)
    outcomes: dict[str, int] = {}

    def note(what: str) -> None:
        outcomes[what] = outcomes.get(what, 0) + 1

    with GatewayClient(KEY, backend.base_url, retries=0) as client:
        for i in range(CYCLES):
            try:
                parent = client.create_sandbox("sh")["id"]
            except GatewayError as exc:
                assert exc.code == "session_bringup_failed"
                note("create failed")
                continue
            try:
                if i % 5 == 0:  # the exec kills its own shell
                    assert client.exec(parent, command="kill -9 $$")["exit_code"] != 0
                if i % 10 == 0:  # over the pro cap: refused before anything forks
                    with pytest.raises(GatewayError):
                        client.fork(parent, count=33)
                try:
                    kids = [c["id"] for c in client.fork(parent, count=2)["children"]]
                    note("forked")
                except GatewayError as exc:
                    assert exc.code == "session_bringup_failed", exc
                    note("fork failed")
                    kids = []
                for kid in kids:
                    assert client.delete_sandbox(kid)["deleted"] is True
            finally:
                assert client.delete_sandbox(parent)["deleted"] is True
        assert client.list_sandboxes() == []
    assert copy_faults.injected > 10 and open_faults.injected > 10
    assert outcomes.get("forked", 0) > 50 and outcomes.get("fork failed", 0) > 10
    assert len(service.sessions) == 0
    # every clone still alive is a wiped, ready one in a pool: none is stray
    pooled = sum(len(pool) for pool in engine._pools.values())
    assert len(engine._live) == pooled
    backend.stop()
    assert set(descendants(os.getpid())) <= before  # not one process left
