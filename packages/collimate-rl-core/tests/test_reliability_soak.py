"""A small soak against a real local backend: many grades from many threads
through random faults of the real proxy. Every grade gets exactly one
outcome (its earned reward or a typed infra error), nothing reaches the
server twice, no session is left, and nothing the server started outlives
it. The backend runs as a process of its own (``collimate serve``), so its
process tree is its own, not shared with other tests' backends. (The long
soak, with memory, is ``hatch run reliability:all``.)"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from collimate_rl import CollimateClient, CollimateError, fresh_seed, grade
from collimate_rl.testing.proxy import FAULTS, FaultProxy
from collimate_rl.testing.reliability import SPEC, candidates, expected_reward, settle_sessions

GRADES = 240
CONCURRENCY = 24


def _children(root: int) -> dict[int, str]:
    """pid -> start time of every descendant of ``root`` (from /proc)."""
    parents: dict[int, list[tuple[int, str]]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2 :].split()
        parents.setdefault(int(fields[1]), []).append((int(entry), fields[19]))
    found: dict[int, str] = {}
    todo = [root]
    while todo:
        for pid, start in parents.get(todo.pop(), []):
            if pid not in found:
                found[pid] = start
                todo.append(pid)
    return found


def _alive(seen: dict[int, str]) -> list[int]:
    out = []
    for pid, start in seen.items():
        try:
            raw = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if raw[raw.rindex(")") + 2 :].split()[19] == start:
            out.append(pid)
    return out


def _serve() -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "collimate_rl.local_backend", "--port", str(port)]
    cmd += ["--run-slots", "1", "--session-ttl", "1", "--log-level", "ERROR"]
    server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    with CollimateClient(url, timeout=2, retries=0) as c:
        for _ in range(600):
            try:
                c.health()
                return server, url
            except CollimateError:
                if server.poll() is not None:
                    break
                time.sleep(0.1)
    server.kill()
    server.wait()
    raise RuntimeError("the backend did not start")


def test_a_soak_through_random_faults_accounts_for_every_grade_once() -> None:
    server, url = _serve()
    seen: dict[int, str] = {}
    try:
        _soak(server.pid, url, seen)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    assert server.returncode == 0
    assert seen, "the backend's processes were never seen"
    deadline = time.monotonic() + 10  # (the last exits are being reaped)
    while _alive(seen) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _alive(seen) == []


def _soak(root: int, url: str, seen: dict[int, str]) -> None:
    with FaultProxy(url, delay_s=3.0) as proxy, CollimateClient(url) as direct:
        client = CollimateClient(proxy.url, timeout=2.0, retries=3, backoff=0.02, retry_budget=2)
        cands = candidates(GRADES, fresh_seed()[:8])
        outcomes: list[list[str]] = [[] for _ in cands]
        lock = threading.Lock()

        def one(i: int) -> None:
            try:
                r = grade(client, "py", cands[i], SPEC, seed=fresh_seed())
                got = (
                    "infra"
                    if r.infra_error
                    else "ok"
                    if r.reward == expected_reward(cands[i])
                    else "wrong"
                )
            except CollimateError:
                got = "infra"
            except Exception as exc:  # an untyped failure is a finding
                got = f"untyped {exc!r}"
            if i % 40 == 7:  # a session round trip rides along
                try:
                    sid = client.create_session("py")["session_id"]
                    client.session_exec(sid, code="print(1)", seed=fresh_seed())
                    client.delete_session(sid)
                except CollimateError:
                    pass
            with lock:
                outcomes[i].append(got)
                seen.update(_children(root))

        proxy.randomize(0.15, FAULTS, seed=3)
        with ThreadPoolExecutor(CONCURRENCY) as pool:
            list(pool.map(one, range(GRADES)))
        proxy.clear()
        client.close()
        stats = proxy.snapshot()
        counters = settle_sessions(direct, 30)

        assert sum(stats.injected.values()) > 0
        assert all(len(o) == 1 for o in outcomes), "a grade without exactly one outcome"
        flat = [o[0] for o in outcomes]
        assert not [o for o in flat if o not in ("ok", "infra")], "untyped failure or wrong reward"
        assert flat.count("ok") > 0
        assert stats.duplicates("exec", "one_shot") == 0
        assert counters.sessions == 0
        assert counters.sessions_created == counters.sessions_ended
        seen.update(_children(root))
