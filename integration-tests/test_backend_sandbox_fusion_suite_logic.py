"""The bookkeeping of ``compat/sandbox_fusion_suite.py`` without
SandboxFusion (its run is the packaging lane's
``test_packaging_sandbox_fusion_suite.py``): a JUnit report read per file,
the gaps asked of ours (not those of the languages no registry here
supplies), and SandboxFusion's pytest kept from the enclosing run's pytest
settings."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SUITE = Path(__file__).parent / "compat" / "sandbox_fusion_suite.py"

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="sandbox.tests.runners.test_python" name="test_python_print" />
<testcase classname="sandbox.tests.runners.test_python" name="test_python_timeout">
  <failure message="AssertionError: assert 'Success' == 'Failed'&#10;more">tb</failure></testcase>
<testcase classname="sandbox.tests.runners.test_swift" name="test_swift_compile_error" />
<testcase classname="sandbox.tests.runners.test_r" name="test_r_print">
  <skipped message="no R" /></testcase>
<testcase classname="sandbox.tests.runners.test_r" name="test_r_timeout">
  <error message="boom" /></testcase>
</testsuite></testsuites>
"""


@pytest.fixture(scope="module")
def suite() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_compat_sandbox_fusion_suite_logic", SUITE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_junit_report_is_read_per_file_with_why(suite: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "report.xml"
    path.write_text(JUNIT)
    outcomes, why = suite.parse_junit(path)
    assert outcomes == {
        "test_python.py": {"test_python_print": "passed", "test_python_timeout": "failed"},
        "test_swift.py": {"test_swift_compile_error": "passed"},
        "test_r.py": {"test_r_print": "skipped", "test_r_timeout": "error"},
    }
    first_line = "AssertionError: assert 'Success' == 'Failed'"
    assert why["test_python.py::test_python_timeout"] == first_line


def test_gaps_are_sandbox_fusions_passes_ours_lacks(suite: ModuleType) -> None:
    sf = suite.SideResult(
        {
            "test_python.py": {"a": "passed", "b": "passed", "c": "failed"},
            "test_swift.py": {"compile_error": "passed"},  # vacuous there: no swiftc
        },
        1.0,
        1.0,
    )
    ours = suite.SideResult(
        {
            "test_python.py": {"a": "passed", "b": "failed", "c": "passed"},
            "test_swift.py": {"compile_error": "failed"},
        },
        1.0,
        1.0,
    )
    assert suite.failing_on_ours(sf, ours) == {"test_python.py": ["b"]}
    table = suite.report(sf, ours)
    assert "test_python.py" in table and "2/3" in table and "not asked" in table


def test_sandbox_fusions_pytest_gets_none_of_this_runs_settings(
    suite: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p collimate_ci_cpu")
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    monkeypatch.setenv("COLLIMATE_CI_CPU_DIR", "/tmp/x")
    env = suite._suite_env(suite.load_peer())
    assert not [k for k in env if k.startswith("PYTEST_")]
    assert "PYTHONPATH" not in env and "COLLIMATE_CI_CPU_DIR" not in env
    assert (env["GOPROXY"], env["GOTOOLCHAIN"], env["SANDBOX_CONFIG"]) == ("off", "local", "local")
    assert {"test_isolation.py"} <= set(suite.NEVER_RUN)
