"""A third-party reward plugin, installed for real, adds a reward kind.

``reward-plugin-example/`` is its own distribution (own pyproject, entry point
in group ``collimate_rl``). Core and the plugin are built as wheels and
installed into a fresh virtual environment (ours from the wheels only, with
``--no-index``; httpx/pluggy from the configured index), then a program in
that environment resolves the kind with ``reward_spec_from_ground_truth`` and
grades with it on a local backend it starts itself.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.packaging]

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "packages" / "collimate-rl-core"
EXAMPLE = Path(__file__).resolve().parent / "reward-plugin-example"


def run(cmd: list[str], *, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run outside the workspace: no PYTHONPATH, no plugin switches inherited."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV") and not k.startswith("COLLIMATE_")
    }
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{cmd} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}"
    return out


def _core_requirements() -> list[str]:
    """collimate-rl-core's runtime requirements, as its metadata declares them."""
    declared = importlib.metadata.requires("collimate-rl-core") or []
    return [req for req in declared if "extra ==" not in req]


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("reward-plugin")
    wheels = home / "wheels"
    for source in (CORE, EXAMPLE):
        run(
            [sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", str(wheels),
             str(source)],
            cwd=home,
        )  # fmt: skip
    env_dir = home / "env"
    run([sys.executable, "-m", "venv", str(env_dir)], cwd=home)
    python = str(env_dir / "bin" / "python")
    # core's own runtime requirements come from the index (markers evaluated by
    # pip for the venv's Python); our distributions only from the built wheels
    pip_install = [python, "-m", "pip", "install", "--quiet", "--no-compile"]
    run([*pip_install, *_core_requirements()], cwd=home)
    run(
        [*pip_install, "--no-index", "--find-links", str(wheels), "collimate-rl-reward-example"],
        cwd=home,
    )
    return env_dir


PROGRAM = textwrap.dedent(
    """
    import json
    from collimate_rl import CollimateClient, grade, reward_spec_from_ground_truth
    from collimate_rl.local_backend import LocalCollimateBackend
    from collimate_rl.rewards import reward_kind_registry
    from collimate_rl_reward_example.plugin import ExpectedStdoutReward

    spec = reward_spec_from_ground_truth({"kind": "expected_stdout", "stdout": "hello\\n"})
    out = {"type": type(spec).__name__, "is_plugin_class": isinstance(spec, ExpectedStdoutReward),
           "kinds": sorted(reward_kind_registry())}
    with LocalCollimateBackend() as backend, CollimateClient(backend.base_url) as client:
        out["right"] = grade(client, "py", "print('hello')", spec).reward
        out["wrong"] = grade(client, "py", "print('bye')", spec).reward
    try:
        reward_spec_from_ground_truth({"kind": "expected_stdout"})
    except ValueError as exc:
        out["bad_gt"] = str(exc)
    print(json.dumps(out))
    """
)


def test_the_plugin_kind_resolves_and_grades(venv: Path) -> None:
    out = run([str(venv / "bin" / "python"), "-c", PROGRAM], cwd=venv)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["type"] == "ExpectedStdoutReward" and result["is_plugin_class"]
    assert {"expected_stdout", "unit_test", "property", "stdio"} <= set(result["kinds"])
    assert (result["right"], result["wrong"]) == (1.0, 0.0)
    assert "needs a 'stdout' string" in result["bad_gt"]


def test_the_plugin_is_listed_and_can_be_blocked(venv: Path) -> None:
    listed = run([str(venv / "bin" / "collimate"), "plugins", "--json"], cwd=venv).stdout
    assert "collimate-rl-reward-example" in listed
    blocked = textwrap.dedent(
        """
        import os
        os.environ["COLLIMATE_RL_BLOCK_PLUGINS"] = "collimate-rl-reward-example"
        from collimate_rl import reward_spec_from_ground_truth
        try:
            reward_spec_from_ground_truth({"kind": "expected_stdout", "stdout": ""})
        except ValueError as exc:
            print("refused:", exc)
        """
    )
    out = run([str(venv / "bin" / "python"), "-c", blocked], cwd=venv).stdout
    assert "refused: unknown reward kind 'expected_stdout'" in out
