"""Find or build a virtualenv holding a published ``collimate-rl`` release
(``0.5.0`` unless another ``version`` is asked for).

Used by the compatibility tests and the latency benchmark. Order, for
0.5.0: the ``COLLIMATE_PEER_PYTHON`` variable, ``/tmp/peer/bin/python`` (the
dev machines' peer venv), then a venv built once in a cache directory
(``$COLLIMATE_PEER_CACHE`` or ``~/.cache/collimate-rl/peer-0.5.0``) with
``pip install collimate-rl==0.5.0`` from PyPI. For another version: its own
cache directory (``.../peer-<version>``, beside the 0.5.0 one), built the
same way. Runs under any Python 3.8+.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PEER_VERSION = "0.5.0"
PEER_REQUIREMENT = f"collimate-rl=={PEER_VERSION}"
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
    wanted = version.rsplit(".", 1)[0] + "." if version == PEER_VERSION else version
    return probe.returncode == 0 and probe.stdout.startswith(wanted)


def peer_python(*, build: bool = True, version: str = PEER_VERSION) -> Path | None:
    """The interpreter of a venv with collimate-rl ``version`` (0.5.x for
    the default; ``None`` if none exists and ``build`` is false)."""
    default_cache = Path.home() / ".cache" / "collimate-rl" / f"peer-{version}"
    if version == PEER_VERSION:
        explicit = os.environ.get("COLLIMATE_PEER_PYTHON")
        if explicit:
            return Path(explicit)
        if _is_peer(DEV_PEER):
            return DEV_PEER
        cache = Path(os.environ.get("COLLIMATE_PEER_CACHE") or default_cache)
    else:
        base = os.environ.get("COLLIMATE_PEER_CACHE")
        cache = Path(base).parent / f"peer-{version}" if base else default_cache
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
            f"collimate-rl=={version}",
        ],
        check=True,
        timeout=900,
        env=clean_env(),
    )
    if not _is_peer(python, version):
        raise RuntimeError(f"built {cache} but it does not import collimate_rl {version}")
    return python
