"""Drain, end to end with the real client: in-flight execs complete, new work
gets 503 ``draining``, and the client gives up with ``CollimateDrainingError``
within its retry budget (while the node is still draining), so a trainer can
route the work to another node."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from collimate_rl import CollimateDrainingError
from collimate_rl.client import CollimateClient
from collimate_rl.local_backend import LocalCollimateBackend


def _wait_for(pred: Any, timeout_s: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return False


def test_drain_with_the_client() -> None:
    backend = LocalCollimateBackend().start()
    try:
        results: list[dict[str, Any]] = []
        with CollimateClient(backend.base_url) as setup:
            sid = setup.create_session("py")["session_id"]

        def inflight() -> None:
            with CollimateClient(backend.base_url) as c:
                results.append(c.exec_once("sh", command="sleep 4; echo one-shot-done"))

        def inflight_session() -> None:
            with CollimateClient(backend.base_url) as c:
                results.append(c.session_exec(sid, command="sleep 4; echo session-done"))

        threads = [threading.Thread(target=f) for f in (inflight, inflight_session)]
        for t in threads:
            t.start()
        assert _wait_for(lambda: backend.health()["running"] == 2)

        backend.drain()
        assert _wait_for(lambda: backend.health()["status"] == "draining")

        budget = 0.5
        with CollimateClient(backend.base_url, retries=5, backoff=0.05, retry_budget=budget) as c:
            assert c.health()["status"] == "draining"
            with pytest.raises(CollimateDrainingError) as info:
                c.exec_once("py", code="print(1)")
            assert info.value.status == 503 and info.value.error_code == "draining"
            with pytest.raises(CollimateDrainingError):
                c.create_session("py")
            with pytest.raises(CollimateDrainingError):
                c.session_exec(sid, code="print(1)")
        # the client gave up within its budget: the in-flight work still runs
        assert backend.health()["running"] == 2

        for t in threads:
            t.join(60)
        outs = sorted(r["stdout"] for r in results)
        assert outs == ["one-shot-done\n", "session-done\n"]
        assert all(r["exit_code"] == 0 for r in results)
        assert backend.wait_stopped(timeout_s=30), "server did not stop after the drain"
    finally:
        backend.stop()
