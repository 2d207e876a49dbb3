"""Nothing leaks: 500 sessions created, exec'd and deleted (some timing out,
some abandoned mid-exec by their client and left to the idle reaper) leave no
process, no directory, no socket file and no listening port behind."""

from __future__ import annotations

import asyncio
import os
import socket
import time
from pathlib import Path

import httpx
import pytest

from collimate_rl.local_backend import LocalCollimateBackend

N_SESSIONS = 500
CONCURRENCY = 16
TOKEN = f"{800 + os.getpid() % 97}.4242"  # a sleep duration unique to this test run


def _descendants(root: int) -> dict[int, str]:
    """pid -> command line of every live descendant of ``root``."""
    parents: dict[int, int] = {}
    cmdlines: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] == "Z":
            continue
        parents[int(entry)] = int(fields[1])
        cmdlines[int(entry)] = cmd
    out: dict[int, str] = {}
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in out:
                out[pid] = cmdlines[pid]
                frontier.append(pid)
    return out


def _listening(port: int) -> bool:
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False


async def _one(c: httpx.AsyncClient, i: int) -> str:
    created = await c.post("/v1/sessions", json={"template_id": "py" if i % 5 == 0 else "sh"})
    assert created.status_code == 201, created.text
    sid = created.json()["session_id"]
    if i % 25 == 1:  # abandoned mid-exec: the client gives up and never deletes
        with pytest.raises(httpx.ReadTimeout):
            await c.post(
                f"/v1/sessions/{sid}/exec",
                json={"command": f"sleep {TOKEN}"},
                timeout=httpx.Timeout(30, read=0.3),
            )
        return "abandoned"
    if i % 25 == 2:  # times out server-side
        r = await c.post(
            f"/v1/sessions/{sid}/exec", json={"command": f"sleep {TOKEN}", "timeout_seconds": 1}
        )
        assert r.json()["exit_code"] == -1, r.text
        outcome = "timed out"
    elif i % 5 == 0:
        r = await c.post(f"/v1/sessions/{sid}/exec", json={"code": f"print({i} * 2)"})
        assert r.json()["stdout"] == f"{i * 2}\n", r.text
        outcome = "ok"
    else:
        r = await c.post(
            f"/v1/sessions/{sid}/exec",
            json={
                "command": "echo $0 > f.txt; cat f.txt",
                "files": [{"path": "in", "content": "x"}],
            },
        )
        assert r.json()["exit_code"] == 0, r.text
        outcome = "ok"
    d = await c.delete(f"/v1/sessions/{sid}")
    assert d.json() == {"deleted": True, "session_id": sid}
    return outcome


async def _churn(base_url: str) -> list[str]:
    sem = asyncio.Semaphore(CONCURRENCY)
    limits = httpx.Limits(max_connections=CONCURRENCY * 2)
    async with httpx.AsyncClient(base_url=base_url, timeout=60, limits=limits) as c:

        async def guarded(i: int) -> str:
            async with sem:
                return await _one(c, i)

        return await asyncio.gather(*(guarded(i) for i in range(N_SESSIONS)))


def _wait_for(pred: object, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if pred():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


@pytest.mark.slow
def test_500_sessions_leave_nothing_behind(tmp_path: Path) -> None:
    me = os.getpid()
    before = set(_descendants(me))  # whatever other fixtures of this session run

    def ours() -> dict[int, str]:
        return {pid: cmd for pid, cmd in _descendants(me).items() if pid not in before}

    sock = tmp_path / "serve.sock"
    # (an idle TTL long enough that a loaded machine's gap between a create
    # and its exec never reaps a session the test still uses)
    backend = LocalCollimateBackend(socket_path=sock, session_ttl=8.0, max_inflight=0)
    backend.start()
    try:
        port = backend.port
        assert port is not None and _listening(port)
        engine = backend.server.service.engine  # type: ignore[union-attr]
        state_dir = getattr(engine, "state_dir", None) or getattr(engine, "_state_dir", None)
        assert state_dir is not None and Path(state_dir).is_dir(), (
            "where does the engine keep state?"
        )
        entries_at_start = set(os.listdir(state_dir))

        outcomes = asyncio.run(_churn(backend.base_url))
        assert outcomes.count("abandoned") == 20 and outcomes.count("timed out") == 20

        # abandoned sessions are reaped by the idle TTL; their execs were
        # already killed when their clients went away
        assert _wait_for(lambda: backend.health()["sessions"] == 0, 45), backend.health()
        assert _wait_for(lambda: backend.health()["inflight"] == 0, 30)
        assert _wait_for(lambda: not [c for c in _descendants(me).values() if TOKEN in c], 30), (
            "an exec process survived"
        )
        leftovers = set(os.listdir(state_dir)) - entries_at_start
        assert not leftovers, f"left in the engine's state dir: {sorted(leftovers)[:5]}"
    finally:
        backend.stop()

    assert _wait_for(lambda: not ours(), 15), ours()
    assert not sock.exists()
    assert not _listening(port)
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), 2):
        pass
    assert not Path(state_dir).exists(), f"engine state dir left: {state_dir}"
