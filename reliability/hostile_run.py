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
    """The host paths a sandbox can read, as ``/v1/health`` lists them
    (``exposed``: per template, ``read_only`` / ``masked`` / ``own``): the
    read-only ones of every template together, each once."""
    exposed = health.get("exposed")
    if not isinstance(exposed, dict) or not exposed:
        return f"n/a (health does not list them; isolation: {health.get('isolation')})"
    paths: list[str] = []
    for view in exposed.values():
        for path in view.get("read_only", []) if isinstance(view, dict) else []:
            if path not in paths:
                paths.append(str(path))
    return f"{len(paths)} read-only, nothing else of the host: {', '.join(paths)}"


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
