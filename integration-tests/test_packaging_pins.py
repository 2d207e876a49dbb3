"""The distributions' versions and the pins between them stay in step
(``tools/pins.py``, ``hatch run pins``): CI fails the moment a release bumps
one ``__about__.py`` and forgets a pin."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "pins.py"


def pins() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pins_tool", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_pin_in_the_repository_is_in_step() -> None:
    run = subprocess.run(
        [sys.executable, str(TOOL), "--check"], capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "every pin is in step" in run.stdout


def test_a_stale_pin_is_found_and_rewritten() -> None:
    tool = pins()
    known = {"collimate-rl-core": "0.7.2", "collimate-rl": "0.7.2"}
    stale = 'dependencies = ["collimate-rl-core[progress]>=0.6.0.dev0,<0.7", "httpx>=0.28"]\n'
    fixed = tool.in_step(stale, known, ROOT / "plugins" / "x" / "pyproject.toml")
    assert fixed == 'dependencies = ["collimate-rl-core[progress]>=0.7.2,<0.8", "httpx>=0.28"]\n'
    assert tool.upper_bound("1.4.0") == "2"


def test_the_meta_distribution_follows_core() -> None:
    tool = pins()
    known = tool.versions()
    assert known["collimate-rl"] == known["collimate-rl-core"]
    meta = tool.META.read_text()
    assert f'version = "{known["collimate-rl-core"]}"' in meta
