"""The published ``collimate-rl==0.5.0`` GatewayClient, in its own venv,
against our local backend's gateway wire (``compat/peer_gateway.py``).

The venv is found or built by ``compat/peer_venv.py`` (as for the daemon
wire's compatibility test)."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from collimate_rl.local_backend import LocalCollimateBackend

COMPAT = Path(__file__).parent / "compat"
PRO, DEMO = "col_pro_peer050_pro", "col_demo_peer050_demo"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_compat_{name}", COMPAT / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.packaging
def test_peer_gateway_client_against_our_server() -> None:
    peer_venv = _load("peer_venv")
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
