"""A small soak against a real local backend: many grades from many threads
through random faults of the real proxy. Every grade gets exactly one
outcome (its earned reward or a typed infra error), nothing reaches the
server twice, no session is left, and nothing the server started outlives
it. The backend runs as a process of its own (``collimate serve``), so its
process tree is its own, not shared with other tests' backends. (The long
soak, with memory, is ``hatch run reliability:all``.)"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from collimate_rl import CollimateClient, CollimateError, fresh_seed
from collimate_rl.testing.procs import descendants, serve_process, still_alive, stop_process
from collimate_rl.testing.proxy import FAULTS, FaultProxy
from collimate_rl.testing.reliability import candidates, grade_outcome, settle_sessions

GRADES = 240
CONCURRENCY = 24


def test_a_soak_through_random_faults_accounts_for_every_grade_once() -> None:
    server, url = serve_process("--run-slots", "1", "--session-ttl", "1")
    seen: dict[int, int] = {}
    try:
        _soak(server.pid, url, seen)
    finally:
        returncode = stop_process(server)
    assert returncode == 0
    assert seen, "the backend's processes were never seen"
    deadline = time.monotonic() + 10  # (the last exits are being reaped)
    while still_alive(seen) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert still_alive(seen) == 0


def _soak(root: int, url: str, seen: dict[int, int]) -> None:
    with FaultProxy(url, delay_s=3.0) as proxy, CollimateClient(url) as direct:
        client = CollimateClient(proxy.url, timeout=2.0, retries=3, backoff=0.02, retry_budget=2)
        cands = candidates(GRADES, fresh_seed()[:8])
        outcomes: list[list[str]] = [[] for _ in cands]
        lock = threading.Lock()

        def one(i: int) -> None:
            got = grade_outcome(client, cands[i])
            if i % 40 == 7:  # a session round trip rides along
                try:
                    sid = client.create_session("py")["session_id"]
                    client.session_exec(sid, code="print(1)", seed=fresh_seed())
                    client.delete_session(sid)
                except CollimateError:
                    pass
            with lock:
                outcomes[i].append(got)
                seen.update(descendants(root))

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
        seen.update(descendants(root))
