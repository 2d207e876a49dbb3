"""The TRL and verl plugin distributions, built and installed for real: each
wheel ships only its subpackage, declares its entry point, depends on core
alone (no torch, transformers or ray), and, installed from the wheels into a
fresh virtual environment beside core, imports and is discovered without
its framework."""

from __future__ import annotations

import email.parser
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.packaging]

ROOT = Path(__file__).resolve().parents[1]
SOURCES = {
    "collimate-rl-core": ROOT / "packages" / "collimate-rl-core",
    "collimate-rl-trl": ROOT / "plugins" / "collimate-rl-trl",
    "collimate-rl-verl": ROOT / "plugins" / "collimate-rl-verl",
}


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, f"{cmd} failed:\n{out.stdout}\n{out.stderr}"
    return out


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    for source in SOURCES.values():
        run([sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", str(out),
             str(source)], cwd=out)  # fmt: skip
    return {name: next(out.glob(f"{name.replace('-', '_')}-*.whl")) for name in SOURCES}


@pytest.mark.parametrize("fw", ["trl", "verl"])
def test_wheel_ships_only_its_subpackage_and_needs_no_framework(
    wheels: dict[str, Path], fw: str
) -> None:
    with zipfile.ZipFile(wheels[f"collimate-rl-{fw}"]) as zf:
        names = zf.namelist()
        info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(zf.read(f"{info}/METADATA").decode())
        eps = zf.read(f"{info}/entry_points.txt").decode()
    code = [n for n in names if not n.startswith(info)]
    assert code and all(n.startswith(f"collimate_rl/{fw}/") for n in code), code
    assert f"collimate_rl/{fw}/py.typed" in code
    assert f"{fw} = collimate_rl.{fw}.plugin" in eps
    requires = meta.get_all("Requires-Dist") or []
    assert len(requires) == 1 and requires[0].startswith("collimate-rl-core"), requires


def test_installed_from_wheels_without_their_frameworks(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path)
    python = venv / "bin" / "python"
    pip_install = [str(python), "-m", "pip", "install", "--quiet", "--no-compile"]
    run([*pip_install, *map(str, wheels.values())], cwd=tmp_path)
    probe = (
        "import json, sys, collimate_rl.trl, collimate_rl.verl\n"
        "from collimate_rl.plugins import new_plugin_manager, plugin_inventory\n"
        "rows = {r.plugin: r.distribution for r in plugin_inventory(new_plugin_manager())}\n"
        "heavy = sorted(m for m in ('trl', 'verl', 'torch', 'transformers', 'ray') "
        "if m in sys.modules)\n"
        "print(json.dumps([rows.get('trl'), rows.get('verl'), heavy,"
        " callable(collimate_rl.verl.compute_score)]))\n"
    )
    out = run([str(python), "-c", probe], cwd=tmp_path)
    assert json.loads(out.stdout) == ["collimate-rl-trl", "collimate-rl-verl", [], True]
