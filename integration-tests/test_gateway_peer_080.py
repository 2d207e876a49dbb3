"""The published ``collimate-rl==0.8.0`` client, in its own venv, runs its
README's gateway flows and its ``FleetView`` against our local backend's
gateway wire (``compat/peer_gateway_080.py``).

The venv is found or built by ``compat/peer_venv.py`` (``pip install
collimate-rl==0.8.0``), as for the 0.5.0 peer. The connect-from-outside
parts of 0.8.0 (port forwards, CDP) are not exercised here.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from collimate_rl.local_backend import LocalCollimateBackend

COMPAT = Path(__file__).parent / "compat"
PRO, DEMO = "col_pro_peer080_pro", "col_demo_peer080_demo"
CHECKS = 11  # the "ok" lines of a full run of peer_gateway_080.py


@pytest.mark.slow
@pytest.mark.packaging
def test_peer_080_gateway_flows_and_fleet_view_against_our_server(peer_venv: ModuleType) -> None:
    python = peer_venv.peer_python(version="0.8.0")
    with LocalCollimateBackend(api_keys=[PRO, DEMO], gateway_max_warm=2) as backend:
        run = subprocess.run(
            [str(python), "-I", str(COMPAT / "peer_gateway_080.py"), backend.base_url, PRO, DEMO],
            capture_output=True,
            text=True,
            timeout=900,
            env=peer_venv.clean_env(),
        )
        assert backend.health()["sessions"] == 0, "the peer's run left sandboxes behind"
    assert run.returncode == 0, run.stdout + run.stderr
    assert "all checks passed" in run.stdout
    assert run.stdout.count("ok  ") == CHECKS, run.stdout
