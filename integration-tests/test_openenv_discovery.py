"""The code environment as a user gets it: its wheel (with core's and the
OpenEnv plugin's) installed into a fresh venv beside one OpenEnv line, then
found by OpenEnv's own ``AutoEnv.from_env`` by name and run through
``CollimateProvider`` on a local backend: a right and a wrong submission are
graded. One venv per OpenEnv line (the lines install the same import names).

The venvs live outside /tmp: a namespaced clone has a private /tmp, and the
environment's server runs in one with the venv's interpreter.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# a fresh venv with OpenEnv (~475 MB, from pip's cache) and a cold server start
pytestmark = [pytest.mark.slow, pytest.mark.packaging, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parents[1]
SOURCES = {
    "collimate-rl-core": ROOT / "packages" / "collimate-rl-core",
    "collimate-rl-openenv": ROOT / "plugins" / "collimate-rl-openenv",
    "openenv-collimate-code": ROOT / "plugins" / "openenv-collimate-code",
}
LINES = {"openenv-0.10": "openenv==0.10.0", "openenv-core-0.3": "openenv-core==0.3.0"}

# Run in the fresh venv; prints one JSON line.
SCRIPT = r"""
import asyncio, importlib.metadata, json, sys
from openenv import AutoEnv
from openenv.auto._discovery import get_discovery
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.openenv import CollimateProvider
from collimate_code import CollimateCodeAction

RIGHT = "def add(a, b):\n    return a + b"
WRONG = "def add(a, b):\n    return a * b"
names = {d.metadata["Name"] for d in importlib.metadata.distributions()}
line = "0.10" if "openenv" in names else "0.3"
info = get_discovery().get_environment_by_name("collimate-code")
with LocalCollimateBackend() as backend:
    grader = {"COLLIMATE_SERVE_URL": backend.base_url}
    provider = CollimateProvider(backend.base_url, env_vars=grader)
    env = AutoEnv.from_env("collimate_code", container_provider=provider, wait_timeout=300)
    if line == "0.10":
        try:
            steps = [env.reset(index=0), env.step(CollimateCodeAction(code=RIGHT)),
                     env.reset(index=0), env.step(CollimateCodeAction(code=WRONG))]
        finally:
            env.close()
    else:
        async def episode():
            await env.disconnect()  # connected on asyncio.run's loop, now gone
            try:
                return [await env.reset(index=0), await env.step(CollimateCodeAction(code=RIGHT)),
                        await env.reset(index=0), await env.step(CollimateCodeAction(code=WRONG))]
            finally:
                await env.close()
        steps = asyncio.run(episode())
    left = backend.server.health()["sessions"]
import collimate_code, collimate_rl.openenv
print(json.dumps({
    "line": line,
    "package": info.package_name if info else None,
    "client": f"{type(env).__module__}.{type(env).__name__}",
    "rewards": [s.reward for s in steps],
    "verdicts": [s.observation.verdict for s in steps],
    "sessions_left": left,
    "files": [collimate_code.__file__, collimate_rl.openenv.__file__],
}))
"""


def _run(cmd: list[str], *, cwd: Path, env: dict[str, str], timeout: float) -> str:
    try:
        out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"{cmd} timed out:\n{exc.stdout!r}\n{exc.stderr!r}") from None
    assert out.returncode == 0, f"{cmd} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}"
    return out.stdout


def _clean_env(home: Path) -> dict[str, str]:
    """No workspace leaking in; OpenEnv's discovery cache in a fresh place."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
        and not k.startswith(("COLLIMATE_RL_", "COLLIMATE_SERVE", "COLLIMATE_API"))
    }
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    user_cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    env.setdefault("UV_CACHE_DIR", str(user_cache / "uv"))
    env["XDG_CACHE_HOME"] = str(home / "xdg-cache")  # 0.10's discovery cache
    env["TMPDIR"] = str(home / "tmp")  # 0.3's discovery cache
    (home / "tmp").mkdir(exist_ok=True)
    # pip's and uv's own caches stay where they are: OpenEnv (~475 MB) is not
    # downloaded twice
    env.setdefault("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))
    return env


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = tmp_path_factory.mktemp("openenv-wheels")
    for source in SOURCES.values():
        subprocess.run(
            [sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", str(out),
             str(source)],
            check=True, capture_output=True, timeout=300,
        )  # fmt: skip
    found = sorted(out.glob("*.whl"))
    assert len(found) == len(SOURCES), found
    return found


def _installer(python: Path) -> list[str]:
    """uv's ``pip install`` into the venv where hatch provides uv (it
    installs the same wheels, from its cache, in seconds), else pip's."""
    uv = os.environ.get("HATCH_UV") or shutil.which("uv")
    if uv:
        return [uv, "pip", "install", "--quiet", "--python", str(python)]
    return [str(python), "-m", "pip", "install", "--quiet", "--no-compile"]


@pytest.fixture(scope="module", params=sorted(LINES))
def venv(request: pytest.FixtureRequest, wheels: list[Path]) -> Iterator[Path]:
    home = Path(tempfile.mkdtemp(prefix="collimate-openenv-", dir="/var/tmp"))
    try:
        os.chmod(home, 0o755)  # the server in a clone runs as another uid
        env = _clean_env(home)
        _run([sys.executable, "-m", "venv", str(home / "env")], cwd=home, env=env, timeout=300)
        python = home / "env" / "bin" / "python"
        _run(
            [*_installer(python), LINES[request.param], *map(str, wheels)],
            cwd=home, env=env, timeout=1200,
        )  # fmt: skip
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_autoenv_finds_the_installed_environment_and_grades(venv: Path) -> None:
    env = _clean_env(venv)
    out = _run([str(venv / "env" / "bin" / "python"), "-c", SCRIPT], cwd=venv, env=env, timeout=900)
    result = json.loads(out.strip().splitlines()[-1])
    assert result["package"] == "openenv-collimate-code"
    assert result["client"] == "collimate_code.client.CollimateCodeEnv"
    assert result["rewards"] == [None, 1.0, None, 0.0]
    assert result["verdicts"] == ["", "passed", "", "failed"]
    assert result["sessions_left"] == 0
    for file in result["files"]:  # from the venv's site-packages, not the workspace
        assert Path(file).is_relative_to(venv / "env")
