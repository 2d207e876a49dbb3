"""A zygote starts at normal priority and goes to the background only once
it said hello. In the idle class from the first instruction, its start
starved for minutes on a node kept busy by other processes, and every clone
of its template (and a backend's ``start()``) waited for it."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from collimate_rl.local_backend.engine import zygote_process
from collimate_rl.local_backend.engine.channel import Channel
from collimate_rl.local_backend.engine.zygote_process import ZygoteProcess

pytestmark = pytest.mark.skipif(
    not zygote_process.BACKGROUND_NICE, reason="only root puts zygotes in the background"
)


def zygote_children() -> list[int]:
    """Our child processes running the zygote script."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and zygote_process.ZYGOTE_SCRIPT.encode() in cmdline:
            found.append(int(entry.name))
    return found


def priority(pid: int) -> tuple[int, int]:
    """(scheduling class, niceness)"""
    return os.sched_getscheduler(pid), os.getpriority(os.PRIO_PROCESS, pid)


def test_a_zygote_is_backgrounded_after_its_hello(monkeypatch: pytest.MonkeyPatch) -> None:
    seen_before_hello: list[tuple[int, int]] = []
    real_recv = Channel.recv
    older = set(zygote_children())  # (other tests' backends in this process)

    async def recv(self: Channel) -> object:
        new = [pid for pid in zygote_children() if pid not in older]
        seen_before_hello.extend(priority(pid) for pid in new)
        return await real_recv(self)

    monkeypatch.setattr(Channel, "recv", recv)

    async def scenario() -> tuple[int, int]:
        zygote = await ZygoteProcess.start(sys.executable, ())
        try:
            return priority(zygote.proc.pid)
        finally:
            await zygote.close()

    after = asyncio.run(scenario())
    assert seen_before_hello and set(seen_before_hello) == {priority(os.getpid())}
    assert after == (os.SCHED_IDLE, zygote_process.BACKGROUND_NICE)
