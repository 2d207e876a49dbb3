"""SandboxFusion's own runner tests as our conformance suite: every test of
its ``sandbox/tests/runners/`` that passes on SandboxFusion on this machine
passes on the local backend's ``/run_code`` and ``/run_jupyter`` too, file
by file (``compat/sandbox_fusion_suite.py`` runs both sides and says how).

SandboxFusion's repository comes from ``$COLLIMATE_SANDBOX_FUSION_REPO``
(``.ci/run`` sets it where this machine has a copy); its side's outcome is
cached on disk by (commit, toolchains), so CI pays it once per machine, and
its venv is made once from PyPI. Its ``test_isolation.py`` (which contacts
an outside host) and its GPU tests are never run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

# a venv of SandboxFusion's dependencies the first time (from pip's cache
# after), its side once per machine (~60 CPU-s), ours every run (~30 CPU-s)
pytestmark = [pytest.mark.slow, pytest.mark.packaging, pytest.mark.timeout(3000)]

SUITE = Path(__file__).parent / "compat" / "sandbox_fusion_suite.py"
REPO_ENV = "COLLIMATE_SANDBOX_FUSION_REPO"


def _suite() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_compat_sandbox_fusion_suite", SUITE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_every_sandbox_fusion_runner_test_passing_there_passes_here(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = os.environ.get(REPO_ENV)
    if not repo or not Path(repo).exists():
        why = (
            f"${REPO_ENV} names no SandboxFusion repository ({repo!r}): clone "
            "github.com/bytedance/SandboxFusion and point it there"
        )
        if os.environ.get("CI"):
            pytest.fail(f"CI runs SandboxFusion's runner tests as a conformance suite: {why}")
        pytest.skip(why)
    out = tmp_path / "suite.json"
    done = subprocess.run(
        [sys.executable, str(SUITE), "--repo", repo, "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=2900,
        check=False,
    )
    tails = f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    assert out.exists(), f"the suite did not finish (exit {done.returncode}):\n{tails}"
    suite = _suite()
    raw = json.loads(out.read_text())
    sf = suite.SideResult.from_json(raw["sandbox_fusion"])
    ours = suite.SideResult.from_json(raw["ours"])
    table = suite.report(sf, ours)
    with capsys.disabled():
        print(f"\nSandboxFusion's runner tests, passed per file:\n{table}")
    # the suite ran what it should: every file but the ones never run
    assert set(sf.outcomes) == set(ours.outcomes)
    assert not set(sf.outcomes) & {*suite.NEVER_RUN, *suite.NEEDS_GPU}
    assert sum(len(sf.passed(f)) for f in sf.outcomes) > 0, table
    gaps = suite.failing_on_ours(sf, ours)
    why = ours.meta.get("why", {})
    detail = "\n".join(
        f"  {file}::{test}: {why.get(f'{file}::{test}', '')}"
        for file, tests in gaps.items()
        for test in tests
    )
    assert not gaps, f"passing on SandboxFusion, failing here:\n{detail}\n{table}"
