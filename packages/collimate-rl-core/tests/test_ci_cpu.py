"""CI's CPU count by test file (``tools/ci_cpu``): a pytest run with the
plugin reports the CPU of what its tests started, under the file that
started it; where it cannot make its cgroup, it reports nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PLUGIN_DIR = ROOT / "tools" / "ci_cpu"
CPUACCT = Path("/sys/fs/cgroup/cpuacct")

#: a test whose CPU is all in a child process (as a server's or a sandbox's is)
BURNS_IN_A_CHILD = """
import subprocess, sys

def test_burns():
    subprocess.run([sys.executable, "-c", "import time\\nt = time.process_time()\\n"
                    "while time.process_time() - t < 0.4: pass"], check=True)

def test_idles():
    pass
"""


def _can_make_a_cgroup() -> bool:
    probe = CPUACCT / f"collimate-ci-probe-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError:
        return False
    probe.rmdir()
    return True


def test_a_childs_cpu_is_counted_under_the_file_that_started_it(tmp_path: Path) -> None:
    if not (PLUGIN_DIR / "collimate_ci_cpu.py").is_file():
        pytest.skip("no monorepo tools/ here (an installed sdist)")
    (tmp_path / "test_burn.py").write_text(BURNS_IN_A_CHILD)
    out = tmp_path / "cpu"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTHONPATH")}
    env.update(PYTHONPATH=str(PLUGIN_DIR), COLLIMATE_CI_CPU_DIR=str(out))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "collimate_ci_cpu", "test_burn.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    reports = list(out.glob("*.json"))
    if not _can_make_a_cgroup():  # (not root, or no cgroup v1 cpuacct)
        assert reports == []
        return
    [report] = [json.loads(p.read_text()) for p in reports]
    assert set(report["files"]) == {"test_burn.py"}
    assert report["files"]["test_burn.py"] >= 0.35, report
    assert report["total"] >= report["files"]["test_burn.py"]
    # and it left no cgroup behind
    assert not (CPUACCT / f"collimate-ci-{reports[0].stem}").exists()
