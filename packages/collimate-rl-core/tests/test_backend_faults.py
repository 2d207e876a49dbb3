"""Engine faults a real engine cannot produce on demand, injected through a
tiny failing engine: the server answers with the right code and still tears
the clone down."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading

import httpx
import pytest

from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.local_backend.engine.api import ExecJob, ExecOutcome, TemplateSpec


class _BrokenClone:
    def __init__(self, log: list[str]) -> None:
        self.clone_id = "broken"
        self.endpoints: dict[str, str] = {}
        self.connections_in = 0
        self.connections_at = 0.0
        self.log = log

    async def run(self, job: ExecJob) -> ExecOutcome:
        raise RuntimeError("engine exploded")

    async def close(self) -> None:
        self.log.append("closed")

    async def release(self) -> None:
        self.log.append("released")


class _BrokenEngine:
    isolation = "process"
    isolation_detail = "process (NOT a sandbox): test engine"

    def __init__(self) -> None:
        self.log: list[str] = []

    async def start(self, templates: list[TemplateSpec]) -> None:
        self.log.append("started")

    async def open_clone(self, template: TemplateSpec, *, egress: object) -> _BrokenClone:
        if template.id == "sh":
            raise OSError("fork failed")
        return _BrokenClone(self.log)

    async def close(self) -> None:
        self.log.append("engine closed")


def test_engine_faults_map_to_wire_codes() -> None:
    engine = _BrokenEngine()
    with LocalCollimateBackend(engine=engine) as b:  # type: ignore[arg-type]
        r = httpx.post(b.base_url + "/v1/exec", json={"template_id": "py", "code": "1"})
        assert r.status_code == 500 and r.json()["error_code"] == "internal_error"
        assert "engine exploded" in r.json()["error"]
        r = httpx.post(b.base_url + "/v1/exec", json={"template_id": "sh", "command": "true"})
        assert r.status_code == 503 and r.json()["error_code"] == "session_bringup_failed"
        r = httpx.post(b.base_url + "/v1/sessions", json={"template_id": "sh"})
        assert r.status_code == 503 and r.json()["error_code"] == "session_bringup_failed"
        assert b.health()["inflight"] == 0
    assert engine.log == ["started", "closed", "engine closed"]


class _StuckEngine(_BrokenEngine):
    """An engine whose warm-up never finishes (a zygote that never says hello)."""

    async def start(self, templates: list[TemplateSpec]) -> None:
        self.log.append("starting")
        await asyncio.Event().wait()


def test_a_start_given_up_on_is_torn_down() -> None:
    engine = _StuckEngine()
    backend = LocalCollimateBackend(engine=engine, start_timeout_s=0.5)  # type: ignore[arg-type]
    threads_before = {t.name for t in threading.enumerate()}
    with pytest.raises(concurrent.futures.TimeoutError):
        backend.start()
    assert engine.log == ["starting", "engine closed"]
    assert "collimate-local-backend" not in {t.name for t in threading.enumerate()} - threads_before
    with pytest.raises(RuntimeError, match="not started"):
        backend.base_url  # noqa: B018
