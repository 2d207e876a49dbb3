"""The published ``collimate-rl==0.8.0`` client, in its own venv, reaching an
app template's HTTP port through our local backend's tunnel
(``compat/peer_tunnel.py``): its ``connect_url`` and ``port_forward`` work
against our server unchanged.

The venv is found or built by ``compat/peer_venv.py`` (``collimate-rl==0.8.0``
from PyPI, in a cache directory of its own)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from types import ModuleType

import pytest

from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.testing.guest_services import WEB_PORT, service_templates

COMPAT = Path(__file__).parent / "compat"
PRO, DEMO = "col_pro_peer080_pro", "col_demo_peer080_demo"


@pytest.mark.slow
@pytest.mark.packaging
def test_peer_080_port_forward_against_our_server(peer_venv: ModuleType) -> None:
    python = peer_venv.peer_python(version="0.8.0")
    services = tempfile.mkdtemp(prefix="collimate-services-")  # reachable by the clones' user
    try:
        with LocalCollimateBackend(
            templates=service_templates(services), api_keys=[PRO, DEMO]
        ) as backend:
            run = subprocess.run(
                [
                    str(python),
                    "-I",
                    str(COMPAT / "peer_tunnel.py"),
                    str(backend.base_url),
                    PRO,
                    DEMO,
                    str(WEB_PORT),
                ],
                capture_output=True,
                text=True,
                timeout=900,
                env=peer_venv.clean_env(),
            )
            assert backend.health()["sessions"] == 0, "the peer's run left sandboxes behind"
    finally:
        shutil.rmtree(services, ignore_errors=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "all checks passed" in run.stdout
    assert run.stdout.count("ok  ") == 6, run.stdout
    assert '"demo_error_code": "network_requires_pro"' in run.stdout, run.stdout
