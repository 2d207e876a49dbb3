"""The published ``collimate-rl==0.5.0`` GatewayClient, in its own venv,
against our local backend's gateway wire (``compat/peer_gateway.py``).

The venv is found or built by ``compat/peer_venv.py`` (as for the daemon
wire's compatibility test)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from collimate_rl.local_backend import LocalCollimateBackend

COMPAT = Path(__file__).parent / "compat"
PRO, DEMO = "col_pro_peer050_pro", "col_demo_peer050_demo"


@pytest.mark.slow
@pytest.mark.packaging
def test_peer_gateway_client_against_our_server(peer_venv: ModuleType) -> None:
    python = peer_venv.peer_python()
    with LocalCollimateBackend(api_keys=[PRO, DEMO], gateway_max_warm=2) as backend:
        run = subprocess.run(
            [str(python), "-I", str(COMPAT / "peer_gateway.py"), backend.base_url, PRO, DEMO],
            capture_output=True,
            text=True,
            timeout=900,
            env=peer_venv.clean_env(),
        )
        assert backend.health()["sessions"] == 0, "the peer's run left sandboxes behind"
    assert run.returncode == 0, run.stdout + run.stderr
    assert "all checks passed" in run.stdout
    assert run.stdout.count("ok  ") == 13, run.stdout
