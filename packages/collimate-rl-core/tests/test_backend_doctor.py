"""``collimate doctor`` as a user runs it: what it reports agrees with what
a real backend chose (its health), with the toolchains found and with the
tools on PATH, and each thing missing comes with the command that adds it."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.local_backend.browser_template import find_chromium
from collimate_rl.local_backend.toolchains import MissingToolchain, find_toolchains


def doctor(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "collimate_rl", "doctor", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_the_report_agrees_with_a_real_backend() -> None:
    done = doctor("--json")
    assert done.returncode == 0, done.stderr[-2000:]
    found: dict[str, dict[str, Any]] = {f["name"]: f for f in json.loads(done.stdout)}
    with LocalCollimateBackend() as backend:
        health = httpx.get(f"{backend.base_url}/v1/health", timeout=60).json()
    assert found["isolation"]["detail"].startswith(health["isolation"])
    assert found["isolation"]["ok"] == (health["isolation"] == "namespaces")
    assert found["bubblewrap"]["ok"] == (shutil.which("bwrap") is not None)
    for name, toolchain in find_toolchains().items():
        entry = found[f"language {name}"]
        assert entry["ok"] == (not isinstance(toolchain, MissingToolchain)), entry
        if isinstance(toolchain, MissingToolchain):
            assert entry["fix"] == toolchain.install
    assert found["chromium"]["ok"] == (find_chromium() is not None)
    assert found["playwright"]["ok"] == (importlib.util.find_spec("playwright") is not None)
    for entry in found.values():
        if not entry["ok"] and entry["name"] != "seccomp":
            assert entry["fix"], entry  # what is missing says how to add it


def test_a_tool_missing_from_path_is_named_with_its_fix(tmp_path: Path) -> None:
    """With no bubblewrap (nor Chromium) on PATH, the plain report says so
    and how to add each; ``--no-backend`` starts nothing."""
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "python").symlink_to(sys.executable)
    env = {**os.environ, "PATH": str(bare)}
    done = doctor("--no-backend", env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("collimate doctor")
    at = next(i for i, line in enumerate(lines) if "bubblewrap" in line)
    assert lines[at].lstrip().startswith("--") and "not installed" in lines[at]
    assert "fix: apt-get install bubblewrap" in lines[at + 1]
    assert any("fix: apt-get install chromium" in line for line in lines)
    assert not any(line.lstrip().startswith(("ok  isolation", "--  isolation")) for line in lines)
    assert lines[-1].endswith("missing or limited")
