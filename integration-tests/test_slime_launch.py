"""The slime launch arguments, from built wheels in a fresh venv.

Only ``collimate-rl-core`` and ``collimate-rl-slime`` are installed there
(from wheels built from this tree), as a slime user would install them.
A launcher that does what slime does with its arguments loads
``--custom-rm-path`` and ``--dynamic-sampling-filter-path`` by dotted path
(slime's ``load_function``) and awaits the hooks on a loop running forever
in a daemon thread (slime's ``AsyncLoopThread``). Settings come from the
``COLLIMATE_*`` environment. The backend is the venv's own
``python -m collimate_rl.local_backend``.
"""

from __future__ import annotations

import email.parser
import json
import os
import re
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.packaging, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[1]
WHEELS = {
    "collimate-rl-core": ROOT / "packages" / "collimate-rl-core",
    "collimate-rl-slime": ROOT / "plugins" / "collimate-rl-slime",
}

LAUNCHER = textwrap.dedent(
    """
    import argparse, asyncio, importlib, json, sys, threading

    def load_function(path):                      # slime.utils.misc.load_function
        module_path, _, attr = path.rpartition(".")
        return getattr(importlib.import_module(module_path), attr)

    p = argparse.ArgumentParser()
    p.add_argument("--custom-rm-path")
    p.add_argument("--group-rm", action="store_true")
    p.add_argument("--reward-key", default=None)
    p.add_argument("--dynamic-sampling-filter-path", default=None)
    args = p.parse_args()

    class Sample:                                  # the fields a reward function reads
        def __init__(self, g, k, response):
            self.group_index, self.index, self.prompt = g, 8 * g + k, f"prompt {g}"
            self.label = json.dumps({"test_list": ["assert add(1, 2) == 3",
                                                   "assert add(2, 2) == 4"]})
            self.response, self.metadata = response, {}
            self.reward, self.remove_sample, self.status = None, False, "completed"

    answers = ["```python\\ndef add(a, b):\\n    return a + b\\n```",
               "```python\\ndef add(a, b):\\n    return 3\\n```"]
    groups = [[Sample(g, k, answers[k % 2]) for k in range(8)] for g in range(8)]

    loop = asyncio.new_event_loop()                # slime.utils.async_utils.AsyncLoopThread
    threading.Thread(target=loop.run_forever, daemon=True).start()
    rm = load_function(args.custom_rm_path)
    keep = load_function(args.dynamic_sampling_filter_path)

    async def rollout():
        if args.group_rm:
            per_group = await asyncio.gather(*(rm(args, g) for g in groups))
            for g, rewards in zip(groups, per_group):
                for s, r in zip(g, rewards):
                    s.reward = r
        else:
            async def one(s):
                s.reward = await rm(args, s)
            await asyncio.gather(*(one(s) for g in groups for s in g))

    asyncio.run_coroutine_threadsafe(rollout(), loop).result()
    rewards = [s.reward if not args.reward_key else s.reward[args.reward_key]
               for g in groups for s in g]
    kept = [bool(keep(args, g)) for g in groups]
    print(json.dumps({"rewards": rewards, "kept": kept}))
    """
)


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, f"{cmd} failed:\n{out.stdout}\n{out.stderr}"
    return out.stdout + out.stderr


def _clean_env() -> dict[str, str]:
    return {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
        and not k.startswith(("COLLIMATE_", "COLLIMATE_RL_"))
    }


@pytest.fixture(scope="module")
def venv_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding core and the slime plugin, from their wheels."""
    home = tmp_path_factory.mktemp("slime-venv")
    dist = home / "dist"
    for source in WHEELS.values():
        _run([sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir",
              str(dist), str(source)], cwd=home)  # fmt: skip
    _run([sys.executable, "-m", "venv", str(home / "env")], cwd=home)
    python = home / "env" / "bin" / "python"
    (core,) = dist.glob("collimate_rl_core-*.whl")
    with zipfile.ZipFile(core) as zf:
        meta_name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(zf.read(meta_name).decode())
    third_party = [r for r in meta.get_all("Requires-Dist", []) if "extra ==" not in r]
    env = {**_clean_env(), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    pip_install = [str(python), "-m", "pip", "install", "--quiet", "--no-compile"]
    _run([*pip_install, *third_party], cwd=home, env=env)
    _run([*pip_install, "--no-index", "--find-links", str(dist), "collimate-rl-core",
          "collimate-rl-slime"], cwd=home, env=env)  # fmt: skip
    return python


@pytest.fixture(scope="module")
def served(venv_python: Path) -> Iterator[str]:
    """The venv's own local backend, as a process."""
    proc = subprocess.Popen(
        [str(venv_python), "-m", "collimate_rl.local_backend", "--port", "0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        start_new_session=True, env=_clean_env(),
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        banner = ""
        for line in proc.stderr:
            banner += line
            if "isolation:" in line:
                break
        found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", banner)
        assert found, banner
        yield found.group(1)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def test_only_core_and_the_plugin_are_installed(venv_python: Path) -> None:
    out = _run([str(venv_python), "-m", "pip", "list", "--format", "json"], cwd=venv_python.parent)
    names = {row["name"] for row in json.loads(out[: out.rindex("]") + 1])}
    assert {"collimate-rl-core", "collimate-rl-slime"} <= names
    assert not names & {"collimate-rl", "collimate-rl-skyrl", "collimate-rl-openenv", "slime"}


@pytest.mark.parametrize(
    "launch",
    [
        ["--custom-rm-path", "collimate_rl.slime.reward_func"],
        ["--custom-rm-path", "collimate_rl.slime.reward_func", "--reward-key", "score"],
        ["--group-rm", "--custom-rm-path", "collimate_rl.slime.group_reward_func"],
    ],
    ids=["per-sample", "reward-key", "group-rm"],
)
def test_launch_arguments(
    venv_python: Path, served: str, tmp_path: Path, launch: list[str]
) -> None:
    script = tmp_path / "launch.py"
    script.write_text(LAUNCHER)
    env = {**_clean_env(), "COLLIMATE_BASE_URL": served, "COLLIMATE_ON_INFRA_ERROR": "remove"}
    argv = [*launch, "--dynamic-sampling-filter-path", "collimate_rl.slime.drop_infra_groups"]
    proc = subprocess.run(
        [str(venv_python), "-X", "dev", str(script), *argv],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["rewards"] == [1.0, 0.5] * 32
    assert result["kept"] == [True] * 8
    assert "Event loop is closed" not in proc.stderr and "unclosed" not in proc.stderr
