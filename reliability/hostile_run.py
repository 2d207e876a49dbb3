"""Hostile requests against a real local backend, counted for the table:
each probe must get its 4xx, slow-loris clients must be cut, an idle flood
shed, and the server must still serve a real client after each."""

from __future__ import annotations

import resource
from dataclasses import dataclass, field

from collimate_rl import CollimateClient, CollimateError
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.testing.hostile import PROBES, idle_flood, probe, slow_loris


@dataclass
class HostileReport:
    tried: int = 0
    contained: int = 0
    failures: list[str] = field(default_factory=list)
    exposed: str = "n/a"

    def count(self, name: str, ok: bool) -> None:
        self.tried += 1
        self.contained += ok
        if not ok:
            self.failures.append(name)


def _serves(url: str) -> bool:
    try:
        with CollimateClient(url, timeout=30, retries=0) as c:
            return c.exec_once("py", code="print(6 * 7)")["stdout"].strip() == "42"
    except CollimateError:
        return False


def exposed_paths(health: dict[str, object]) -> str:
    """What ``/v1/health`` says about host paths a sandbox can see, if it
    says anything (the key names the hardening work may give it)."""
    for key, value in health.items():
        if "expos" in key or key in ("host_paths", "visible_paths"):
            if isinstance(value, (list, tuple)):
                return f"{len(value)} ({key}: {', '.join(map(str, value))})"
            return f"{key}: {value}"
    return f"n/a (health does not list them; isolation: {health.get('isolation')})"


def run_hostile(*, flood: int) -> HostileReport:
    report = HostileReport()
    backend = LocalCollimateBackend(run_slots=1)
    backend.config.max_body_bytes = 1 << 20
    with backend:
        port, url = backend.port or 0, backend.base_url
        http = backend.server.http
        assert http is not None
        for p in PROBES:
            status = probe("127.0.0.1", port, p.raw)
            report.count(p.name, status in p.due and _serves(url))
        http.idle_timeout_s = 1.0
        for in_body in (False, True):
            held = slow_loris("127.0.0.1", port, seconds=20, in_body=in_body)
            report.count(
                f"slow loris ({'body' if in_body else 'headers'})", held < 20 and _serves(url)
            )
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        count = min(flood, (soft - 200) // 2)  # both ends live in this process
        http.max_connections = max(100, count // 5)
        with idle_flood("127.0.0.1", port, count) as socks:
            report.count(f"{len(socks)} idle connections", _serves(url))
        report.count("healthy after all", backend.health()["status"] == "ok")
        report.exposed = exposed_paths(backend.health())
    return report
