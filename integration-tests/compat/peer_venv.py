"""Find or build a virtualenv holding the published ``collimate-rl==0.5.0``.

Used by the compatibility test and the latency benchmark. Order: the
``COLLIMATE_PEER_PYTHON`` variable, ``/tmp/peer/bin/python`` (the dev
machines' peer venv), then a venv built once in a cache directory
(``$COLLIMATE_PEER_CACHE`` or ``~/.cache/collimate-rl/peer-0.5.0``) with
``pip install collimate-rl==0.5.0`` from PyPI. Runs under any Python 3.8+.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PEER_REQUIREMENT = "collimate-rl==0.5.0"
DEV_PEER = Path("/tmp/peer/bin/python")


def clean_env() -> dict[str, str]:
    """The environment for peer processes: without PYTHONPATH/PYTHONHOME, so
    our own ``collimate_rl`` can never shadow the peer's."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def _is_peer(python: Path) -> bool:
    if not python.exists():
        return False
    probe = subprocess.run(
        [
            str(python),
            "-I",
            "-c",
            "import collimate_rl, sys; sys.stdout.write(collimate_rl.__version__)",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env(),
    )
    return probe.returncode == 0 and probe.stdout.startswith("0.5.")


def peer_python(*, build: bool = True) -> Path | None:
    """The interpreter of a venv with collimate-rl 0.5.x (``None`` if none
    exists and ``build`` is false)."""
    explicit = os.environ.get("COLLIMATE_PEER_PYTHON")
    if explicit:
        return Path(explicit)
    if _is_peer(DEV_PEER):
        return DEV_PEER
    cache = Path(
        os.environ.get("COLLIMATE_PEER_CACHE")
        or Path.home() / ".cache" / "collimate-rl" / "peer-0.5.0"
    )
    python = cache / "bin" / "python"
    if _is_peer(python):
        return python
    if not build:
        return None
    cache.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "venv", "--clear", str(cache)],
        check=True,
        timeout=600,
        env=clean_env(),
    )
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            PEER_REQUIREMENT,
        ],
        check=True,
        timeout=900,
        env=clean_env(),
    )
    if not _is_peer(python):
        raise RuntimeError(f"built {cache} but it does not import collimate_rl 0.5.x")
    return python
