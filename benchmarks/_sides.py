"""What the grading benchmarks share: both backends as processes of their own,
and the collimate-rl 0.5.0 interpreter (not a benchmark: no ``bench_`` prefix).

Our side is ``python -m collimate_rl.local_backend`` from this tree; theirs
is the same command from a venv holding the published 0.5.0 (found or built
by ``integration-tests/compat/peer_venv.py``: ``$COLLIMATE_PEER_PYTHON``,
``/tmp/peer``, else a venv made once in ``~/.cache``).
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
PEER_VENV = HERE.parent / "integration-tests" / "compat" / "peer_venv.py"


def _peer_venv() -> Any:
    spec = importlib.util.spec_from_file_location("_peer_venv", PEER_VENV)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def peer_python() -> Path:
    """The interpreter of a venv with collimate-rl 0.5.0."""
    python = _peer_venv().peer_python()
    assert python is not None
    return Path(python)


def peer_env() -> dict[str, str]:
    """The peer's own interpreter and packages only (no PYTHONPATH of ours)."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy since boot (every CPU;
    ``/proc/stat`` without idle and iowait; guest time is inside user)."""
    with open("/proc/stat") as fh:
        fields = [int(x) for x in fh.readline().split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"backend {url} exited with {proc.returncode}:\n{tail}")
        try:
            if httpx.get(f"{url}/v1/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"backend {url} did not become healthy")


@contextmanager
def backend(argv: list[str], env: dict[str, str] | None = None) -> Iterator[str]:
    """A backend process (``argv`` plus ``--port``) on a free port: its URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "backend.log"
        with log.open("wb") as sink:
            proc = subprocess.Popen(
                [*argv, "--port", str(port)],
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=tmp,
                env=env,
            )
        try:
            _wait_healthy(url, proc, log, 60)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)


def ours_backend() -> Any:
    """Our local backend (namespaced clones where the machine allows)."""
    return backend([sys.executable, "-m", "collimate_rl.local_backend", "--host", "127.0.0.1"])


#: Where 0.5.0's grader writes each candidate: an absolute path its local
#: backend writes on the host, outside any sandbox, and never removes.
PEER_LITTER = "colcand_*.py"


@contextmanager
def peer_backend(python: Path) -> Iterator[str]:
    """0.5.0's local backend; the candidate files it leaves in ``/tmp`` are
    removed when it stops (a run of the benchmarks left thousands)."""
    before = set(Path("/tmp").glob(PEER_LITTER))
    try:
        with backend(
            [str(python), "-m", "collimate_rl.local_backend", "--template", "py"], peer_env()
        ) as url:
            yield url
    finally:
        for path in set(Path("/tmp").glob(PEER_LITTER)) - before:
            path.unlink(missing_ok=True)
