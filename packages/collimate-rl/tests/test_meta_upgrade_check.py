"""The meta distribution's upgrade check (``src/collimate_rl_upgrade_check.pth``
and ``src/_collimate_rl_upgrade_check.py``), run the way Python runs it: a
fresh interpreter without ``site`` calls ``site.addsitedir`` on a site
directory laid out as pip leaves it (healthy, editable, or after an in-place
upgrade from collimate-rl 0.8.0 deleted core's files). The real upgrade, with
pip and the published release, is ``integration-tests/test_packaging_install_by_name.py``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PTH = "collimate_rl_upgrade_check.pth"
MODULE = "_collimate_rl_upgrade_check.py"

#: what collimate-rl 0.8.0's uninstall deletes of core's and the slime plugin's files
LOST = [
    "collimate_rl/__init__.py",
    "collimate_rl/client.py",
    "collimate_rl/gateway.py",
    "collimate_rl/slime/__init__.py",
    "../../../bin/collimate",
]
KEPT = ["collimate_rl/cli.py", "collimate_rl/errors.py", "collimate_rl/slime/plugin.py"]


def dist_info(site: Path, name: str, version: str, files: list[str]) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    record = [f"{f},sha256=x,1" for f in files]
    record += [f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]
    record.append("collimate_rl/__pycache__/__init__.cpython-311.pyc,,")  # never reported
    (info / "RECORD").write_text("\n".join(record) + "\n")
    (info / "METADATA").write_text(f"Name: {name}\nVersion: {version}\n")


def site_dir(tmp_path: Path, present: list[str]) -> Path:
    """A site-packages with the meta's two files, our dist-infos and ``present``."""
    site = tmp_path / "lib" / "python3" / "site-packages"
    site.mkdir(parents=True)
    shutil.copy(SRC / PTH, site / PTH)
    shutil.copy(SRC / MODULE, site / MODULE)
    dist_info(site, "collimate-rl", "0.9.0", [PTH, MODULE])
    core = [f for f in LOST + KEPT if "slime" not in f]
    dist_info(site, "collimate-rl-core", "0.9.0", core)
    dist_info(site, "collimate-rl-slime", "0.9.0", [f for f in LOST + KEPT if "slime" in f])
    for rel in present:
        path = (site / rel).resolve()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    return site


def start(site: Path, times: int = 1) -> subprocess.CompletedProcess[str]:
    """What interpreter start does with the directory (a venv does it twice)."""
    code = f"import site, sys\nfor _ in range({times}):\n    site.addsitedir({str(site)!r})\n"
    return subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60
    )


def test_the_pth_file_is_one_import_line_and_a_comment() -> None:
    lines = (SRC / PTH).read_text().splitlines()
    code = [line for line in lines if line.strip() and not line.startswith("#")]
    assert len(code) == 1 and code[0].startswith("import "), lines


def test_healthy_install_is_silent(tmp_path: Path) -> None:
    site = site_dir(tmp_path, LOST + KEPT)
    out = start(site, times=2)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert out.stdout == ""


def test_editable_install_is_silent(tmp_path: Path) -> None:
    # hatch's workspace: core's code lives in its src/, not in site-packages
    site = site_dir(tmp_path, [])
    out = start(site)
    assert out.returncode == 0 and out.stderr == "", out.stderr


def test_plugin_wheels_beside_an_editable_core_are_silent(tmp_path: Path) -> None:
    site = site_dir(tmp_path, ["collimate_rl/slime/__init__.py", "collimate_rl/slime/plugin.py"])
    out = start(site)
    assert out.returncode == 0 and out.stderr == "", out.stderr


def test_files_lost_to_the_old_release_uninstall_print_the_repair_command(tmp_path: Path) -> None:
    site = site_dir(tmp_path, KEPT)
    out = start(site, times=2)  # as in a venv: the .pth runs twice, the message once
    assert out.returncode == 0
    err = out.stderr
    assert err.count("collimate-rl: this environment is missing files of") == 1, err
    assert "collimate-rl-core 0.9.0, collimate-rl-slime 0.9.0" in err
    assert "collimate_rl/__init__.py" in err and "bin/collimate" in err
    assert "collimate_rl/slime/__init__.py" in err
    assert "__pycache__" not in err and "collimate_rl/cli.py" not in err
    assert err.rstrip().endswith(
        "-m pip install --force-reinstall --no-deps "
        "collimate-rl-core==0.9.0 collimate-rl-slime==0.9.0"
    ), err


def test_only_the_damaged_distributions_are_named(tmp_path: Path) -> None:
    site = site_dir(tmp_path, [*KEPT, "collimate_rl/slime/__init__.py"])
    err = start(site).stderr
    assert "collimate-rl-slime" not in err, err
    assert err.rstrip().endswith("--no-deps collimate-rl-core==0.9.0"), err


@pytest.mark.parametrize("record", ["missing", "a directory"])
def test_the_check_never_raises(tmp_path: Path, record: str) -> None:
    site = site_dir(tmp_path, KEPT)
    for path in site.glob("*.dist-info/RECORD"):
        path.unlink()
        if record == "a directory":
            path.mkdir()
    out = start(site)
    assert out.returncode == 0
    assert "Error processing line" not in out.stderr, out.stderr
