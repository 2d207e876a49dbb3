"""Fixtures of the integration tests."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

COMPAT = Path(__file__).parent / "compat"


@pytest.fixture(scope="session")
def peer_venv() -> ModuleType:
    """``compat/peer_venv.py``, which finds or builds the venv of a published
    release (loaded from its file: ``compat/`` also holds scripts run by
    the peers' own interpreters, so it is no package of this test tree)."""
    spec = importlib.util.spec_from_file_location("_compat_peer_venv", COMPAT / "peer_venv.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
