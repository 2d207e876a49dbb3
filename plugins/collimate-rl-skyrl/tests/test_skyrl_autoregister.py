"""Auto-registration: a new Python process that imports ``skyrl_gym`` finds
``collimate_code`` with no user import, a process that never imports it
loads nothing of ours but the hook, the environment variable turns it off,
and registering twice is harmless.

Each case runs a NEW interpreter started without site processing (``-S``,
so this environment's own install of the hook stays out of it), with this
interpreter's ``sys.path``, and a site directory holding the shipped
``.pth`` and hook module: ``site.addsitedir`` processes a ``.pth`` exactly
as interpreter start does. The last test checks this environment's own
install (a wheel or hatch's editable install) carries them and works.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PTH = "collimate_rl_skyrl_autoregister.pth"
HOOK = "_collimate_rl_skyrl_autoregister.py"


@pytest.fixture
def site_dir(tmp_path: Path) -> Path:
    """A site directory holding what the wheel puts at site-packages' root."""
    d = tmp_path / "site"
    d.mkdir()
    shutil.copy(SRC / PTH, d / PTH)
    shutil.copy(SRC / HOOK, d / HOOK)
    return d


def run(site: Path, body: str, **env: str) -> Any:
    """Run ``body`` in a new interpreter after its site dir is processed;
    ``body`` sets ``out``, printed as JSON."""
    code = (
        "import json, os, shutil, site, sys, tempfile\n"
        f"sys.path[:] = {sys.path!r}\n"
        # what site itself loads to read any .pth (3.13: the utf-8-sig codec) is not ours
        "warm = tempfile.mkdtemp()\n"
        "open(os.path.join(warm, 'warm.pth'), 'w').write('# nothing\\n')\n"
        "site.addsitedir(warm)\n"
        "shutil.rmtree(warm)\n"
        "before = set(sys.modules)\n"
        f"site.addsitedir({str(site)!r})\n"
        "added = sorted(set(sys.modules) - before)\n"
        f"{body}\n"
        "print(json.dumps(out))\n"
    )
    environ = {k: v for k, v in os.environ.items() if not k.startswith("COLLIMATE_RL_SKYRL")}
    environ.update(env)
    proc = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=120, env=environ
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_importing_skyrl_gym_registers_collimate_code(site_dir: Path) -> None:
    out = run(
        site_dir,
        "import skyrl_gym\n"
        "spec = skyrl_gym.registry.get('collimate_code')\n"
        "out = [spec and spec.entry_point, 'collimate_rl' in sys.modules,\n"
        "       type(skyrl_gym.__loader__).__name__, type(skyrl_gym.__spec__.loader).__name__,\n"
        "       [type(f).__name__ for f in sys.meta_path if type(f).__name__ == 'Finder']]",
    )
    entry_point, core_loaded, loader, spec_loader, finders = out
    assert entry_point == "collimate_rl.skyrl.env:CollimateCodeEnv"
    assert core_loaded is False  # a string entry point: nothing of ours loads until make()
    assert loader == spec_loader == "SourceFileLoader"  # the module keeps its real loader
    assert finders == []  # the hook removed itself


def test_make_works_in_that_process(site_dir: Path) -> None:
    out = run(
        site_dir,
        "import skyrl_gym\n"
        "env = skyrl_gym.make('collimate_code', env_config={},\n"
        "    extras={'reward_spec': {'ground_truth': {'test_list': ['assert f() == 1']}}})\n"
        "out = [type(env).__module__, type(env).__name__, env.max_turns]",
    )
    assert out == ["collimate_rl.skyrl.env", "CollimateCodeEnv", 1]


def test_a_process_that_never_imports_skyrl_gym_loads_only_the_hook(site_dir: Path) -> None:
    out = run(
        site_dir,
        "out = [added, [m for m in sys.modules if m.startswith(('collimate_rl', 'skyrl_gym'))],\n"
        "       sum(getattr(f, 'collimate_rl_skyrl_autoregister', False) for f in sys.meta_path)]",
    )
    added, ours, finders = out
    assert added == ["_collimate_rl_skyrl_autoregister"]  # it imports nothing else
    assert ours == [] and finders == 1


@pytest.mark.parametrize("value", ["0", "false", "No", "off"])
def test_the_environment_variable_turns_it_off(site_dir: Path, value: str) -> None:
    out = run(
        site_dir,
        "import skyrl_gym\nout = 'collimate_code' in skyrl_gym.registry",
        COLLIMATE_RL_SKYRL_AUTOREGISTER=value,
    )
    assert out is False


def test_registering_again_is_harmless(site_dir: Path) -> None:
    out = run(
        site_dir,
        "import skyrl_gym, _collimate_rl_skyrl_autoregister as hook\n"
        "from collimate_rl.skyrl import register\n"
        "hook.register(skyrl_gym)\n"
        "hook.install()\n"
        "out = [register(), register(), sorted(skyrl_gym.registry).count('collimate_code')]",
    )
    assert out == [False, False, 1]


def test_manual_registration_without_the_hook(tmp_path: Path) -> None:
    out = run(
        tmp_path,  # no .pth here
        "import skyrl_gym\nfrom collimate_rl.skyrl import register\n"
        "out = ['collimate_code' in skyrl_gym.registry, register(), register()]",
    )
    assert out == [False, True, False]


def test_an_env_registered_first_under_the_name_stays(site_dir: Path) -> None:
    out = run(
        site_dir,
        "import skyrl_gym.envs.registration as reg\n"  # imports skyrl_gym first: hook registers
        "import skyrl_gym\n"
        "reg.deregister('collimate_code')\n"
        "skyrl_gym.register(id='collimate_code', entry_point='skyrl_gym.envs.gsm8k.env:GSM8kEnv')\n"
        "from collimate_rl.skyrl import register\n"
        "out = [register(), skyrl_gym.registry['collimate_code'].entry_point]",
    )
    assert out == [False, "skyrl_gym.envs.gsm8k.env:GSM8kEnv"]


def test_a_failing_registration_warns_and_never_breaks_the_import(
    site_dir: Path, tmp_path: Path
) -> None:
    fake = tmp_path / "fake"
    (fake / "skyrl_gym").mkdir(parents=True)
    (fake / "skyrl_gym" / "__init__.py").write_text("VALUE = 42\n")  # no registry at all
    out = run(
        site_dir,
        f"sys.path.insert(0, {str(fake)!r})\n"
        "import warnings\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    import skyrl_gym\n"
        "out = [skyrl_gym.VALUE, [str(w.message) for w in caught]]",
    )
    value, warned = out
    assert value == 42
    assert len(warned) == 1 and "could not register 'collimate_code'" in warned[0]


def test_this_environment_installed_the_hook_and_it_works() -> None:
    """The install this suite runs in (a built wheel or hatch's editable
    install) put the .pth at site-packages' root: a plain new process finds
    the env. A stale environment fails here: recreate it (``hatch env remove``)."""
    files = {str(f) for f in importlib.metadata.files("collimate-rl-skyrl") or []}
    assert {PTH, HOOK} <= files, sorted(files)
    code = "import skyrl_gym, json; print(json.dumps('collimate_code' in skyrl_gym.registry))"
    environ = {k: v for k, v in os.environ.items() if not k.startswith("COLLIMATE_RL_SKYRL")}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=environ
    )
    assert proc.returncode == 0 and json.loads(proc.stdout) is True, proc.stderr
