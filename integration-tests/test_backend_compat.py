"""The published ``collimate-rl==0.5.0`` client, in its own venv, against our
local backend over TCP and the unix socket (``compat/peer_compat.py``).

The venv is the dev machines' ``/tmp/peer`` when present; elsewhere (CI) it
is built once in a cache directory from PyPI."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from collimate_rl.local_backend import LocalCollimateBackend

COMPAT = Path(__file__).parent / "compat"


@pytest.mark.slow
@pytest.mark.packaging
def test_peer_client_against_our_server(tmp_path: Path, peer_venv: ModuleType) -> None:
    python = peer_venv.peer_python()
    sock = tmp_path / "serve.sock"
    with LocalCollimateBackend(socket_path=sock) as backend:
        run = subprocess.run(
            [str(python), "-I", str(COMPAT / "peer_compat.py"), backend.base_url, str(sock)],
            capture_output=True,
            text=True,
            timeout=600,
            env=peer_venv.clean_env(),
        )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "all checks passed" in run.stdout
    assert run.stdout.count("ok  ") == 18, run.stdout
