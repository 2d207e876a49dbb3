"""The SkyRL adapter as a user installs it: the built ``collimate-rl-skyrl``
and ``collimate-rl-core`` wheels (and their dependencies, skyrl-gym among
them) in a fresh venv outside the workspace. A NEW process that only does
``import skyrl_gym`` (no import of ours) makes ``collimate_code`` with an
empty ``env_config``, the target named by the environment, and grades on a
local backend this test runs, over TCP and the unix socket: 8 rollouts of
one prompt share one seed under ``seed_mode: crn``, two prompts get two.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from collimate_rl.local_backend import LocalCollimateBackend

pytestmark = [pytest.mark.slow, pytest.mark.packaging]

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "packages" / "collimate-rl-core"
PLUGIN = ROOT / "plugins" / "collimate-rl-skyrl"
SKYRL_GYM = "skyrl-gym==0.4.0"


def clean_env(**extra: str) -> dict[str, str]:
    """The caller's environment without anything pointing into the workspace."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV") and not k.startswith("COLLIMATE")
    }
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.update(extra)
    return env


def run(cmd: list[str], cwd: Path, timeout: float = 600, **env: str) -> str:
    out = subprocess.run(
        cmd, cwd=cwd, env=clean_env(**env), capture_output=True, text=True, timeout=timeout
    )
    assert out.returncode == 0, f"{cmd} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}"
    return out.stdout


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("skyrl-wheels")
    for source in (CORE, PLUGIN):
        build = [sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", str(out)]
        run([*build, str(source)], out)
    return out


@pytest.fixture(scope="module")
def venv(wheels: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """core + the SkyRL plugin from the built wheels; third-party packages from
    the configured index (or pip's cache)."""
    home = tmp_path_factory.mktemp("skyrl-venv")
    run([sys.executable, "-m", "venv", str(home / "env")], home)
    python = home / "env" / "bin" / "python"
    (core,) = wheels.glob("collimate_rl_core-*.whl")
    (plugin,) = wheels.glob("collimate_rl_skyrl-*.whl")
    with zipfile.ZipFile(core) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        requires = [
            line.split(":", 1)[1].strip()
            for line in zf.read(meta).decode().splitlines()
            if line.startswith("Requires-Dist:") and "extra ==" not in line
        ]
    pip_install = [str(python), "-m", "pip", "install", "--quiet", "--no-compile"]
    run([*pip_install, SKYRL_GYM, *requires], home)
    ours = ["--no-index", "--no-deps", str(core), str(plugin)]  # never from an index
    run([*pip_install, *ours], home)
    return python


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalCollimateBackend]:
    with (
        tempfile.TemporaryDirectory(prefix="crl-wheel-") as tmp,
        LocalCollimateBackend(socket_path=Path(tmp) / "w.sock") as b,
    ):
        yield b


ROLLOUTS = r"""
import json, sys
import skyrl_gym   # the only import: collimate_code must already be there

def row(i):
    return {
        "data_source": "mbpp",
        "reward_spec": {"ground_truth": {"test_list": [f"assert add({i}, 1) == {i + 1}"]},
                        "entry": "add"},
        "extra_info": {"split": "train", "index": i},
        "max_turns": 1,
    }

RIGHT = "```python\ndef add(a, b):\n    return a + b\n```"
out = {"ours_before_make": sorted(m for m in sys.modules if m.startswith("collimate_rl")),
       "rollouts": []}
for prompt in (0, 1):
    for sample in range(8):
        extras = row(prompt)
        extras["collimate"] = {"seed_mode": "crn"}
        env = skyrl_gym.make("collimate_code", env_config={}, extras=extras)
        step = env.step(RIGHT)
        env.close()
        md = step["metadata"]
        out["rollouts"].append([prompt, step["reward"], md["seed"], md["seed_ack"], md["verdict"]])
out["env_module"] = type(env).__module__
print(json.dumps(out))
"""


@pytest.mark.parametrize("wire", ["tcp", "unix"])
def test_a_new_process_grades_with_an_empty_env_config(
    venv: Path, backend: LocalCollimateBackend, tmp_path: Path, wire: str
) -> None:
    target = (
        {"COLLIMATE_SERVE_URL": backend.base_url}
        if wire == "tcp"
        else {"COLLIMATE_SERVE_SOCKET": str(backend.socket_path)}
    )
    out = json.loads(run([str(venv), "-c", ROLLOUTS], tmp_path, **target))
    assert out["ours_before_make"] == []  # registered without importing us
    assert out["env_module"] == "collimate_rl.skyrl.env"
    rollouts: list[list[Any]] = out["rollouts"]
    assert len(rollouts) == 16
    assert all(r[1] == 1.0 and r[3] == "verified" and r[4] == "passed" for r in rollouts)
    seeds = {p: {r[2] for r in rollouts if r[0] == p} for p in (0, 1)}
    assert len(seeds[0]) == 1 and len(seeds[1]) == 1  # 8 rollouts, one seed
    assert seeds[0] != seeds[1]  # two prompts, two seeds


def test_the_wheel_ships_the_hook_at_site_packages_root(wheels: Path) -> None:
    (plugin,) = wheels.glob("collimate_rl_skyrl-*.whl")
    names = zipfile.ZipFile(plugin).namelist()
    assert "collimate_rl_skyrl_autoregister.pth" in names
    assert "_collimate_rl_skyrl_autoregister.py" in names
    pth = zipfile.ZipFile(plugin).read("collimate_rl_skyrl_autoregister.pth").decode()
    assert pth.strip() == "import _collimate_rl_skyrl_autoregister"


def test_a_process_that_never_imports_skyrl_gym_pays_for_the_hook_only(
    venv: Path, tmp_path: Path
) -> None:
    code = (
        "import json, sys;"
        "print(json.dumps(sorted(m for m in sys.modules"
        " if m.startswith(('collimate_rl', 'skyrl_gym', '_collimate', 'pandas', 'httpx')))))"
    )
    assert json.loads(run([str(venv), "-c", code], tmp_path)) == [
        "_collimate_rl_skyrl_autoregister"
    ]


def test_the_environment_variable_opts_out_in_the_installed_venv(
    venv: Path, tmp_path: Path
) -> None:
    code = "import json, skyrl_gym; print(json.dumps('collimate_code' in skyrl_gym.registry))"
    assert json.loads(run([str(venv), "-c", code], tmp_path)) is True
    off = run([str(venv), "-c", code], tmp_path, COLLIMATE_RL_SKYRL_AUTOREGISTER="0")
    assert json.loads(off) is False
