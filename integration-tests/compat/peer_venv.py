"""Find or build a virtualenv holding a published ``collimate-rl`` release
(0.5.0 unless told otherwise; the 0.8.0 peer test asks for 0.8.0).

Used by the compatibility tests and the latency benchmark. Order for 0.5.0:
the ``COLLIMATE_PEER_PYTHON`` variable, ``/tmp/peer/bin/python`` (the dev
machines' peer venv), then a venv built once in a cache directory
(``$COLLIMATE_PEER_CACHE`` or ``~/.cache/collimate-rl/peer-0.5.0``) with
``pip install collimate-rl==0.5.0`` from PyPI. Another release ``X.Y.Z``
looks at ``$COLLIMATE_PEER_PYTHON_XYZ`` (``COLLIMATE_PEER_PYTHON_080``),
then builds ``~/.cache/collimate-rl/peer-X.Y.Z`` the same way. Runs under
any Python 3.8+.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PEER_VERSION = "0.5.0"
PEER_REQUIREMENT = "collimate-rl==" + PEER_VERSION
DEV_PEER = Path("/tmp/peer/bin/python")


def clean_env() -> dict[str, str]:
    """The environment for peer processes: without PYTHONPATH/PYTHONHOME, so
    our own ``collimate_rl`` can never shadow the peer's."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def _is_peer(python: Path, version: str = PEER_VERSION) -> bool:
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
    # the same minor release (0.5.x for 0.5.0), as the peer tests were written for
    return probe.returncode == 0 and probe.stdout.startswith(version.rsplit(".", 1)[0] + ".")


def peer_python(*, build: bool = True, version: str = PEER_VERSION) -> Path | None:
    """The interpreter of a venv with collimate-rl ``version`` (``None`` if
    none exists and ``build`` is false)."""
    default = version == PEER_VERSION
    variable = "COLLIMATE_PEER_PYTHON" + ("" if default else "_" + version.replace(".", ""))
    explicit = os.environ.get(variable)
    if explicit:
        return Path(explicit)
    if default and _is_peer(DEV_PEER):
        return DEV_PEER
    cache = Path(
        (os.environ.get("COLLIMATE_PEER_CACHE") if default else None)
        or Path.home() / ".cache" / "collimate-rl" / ("peer-" + version)
    )
    python = cache / "bin" / "python"
    if _is_peer(python, version):
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
            "collimate-rl==" + version,
        ],
        check=True,
        timeout=900,
        env=clean_env(),
    )
    if not _is_peer(python, version):
        raise RuntimeError(f"built {cache} but it does not import collimate_rl {version}")
    return python
