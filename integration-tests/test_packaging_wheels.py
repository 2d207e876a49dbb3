"""Built distributions, installed for real: wheels and sdists of every
distribution, then core + one plugin (through the meta distribution's extra)
in a fresh virtual environment, outside the workspace.

This is the layout users get from pip: the plugin wheel ships only
``collimate_rl/slime/`` and must still import as ``collimate_rl.slime`` and be
discovered through its entry point.
"""

from __future__ import annotations

import email.parser
import json
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.packaging]

ROOT = Path(__file__).resolve().parents[1]
DISTRIBUTIONS = {
    "collimate-rl-core": ROOT / "packages" / "collimate-rl-core",
    "collimate-rl": ROOT / "packages" / "collimate-rl",
    "collimate-rl-skyrl": ROOT / "plugins" / "collimate-rl-skyrl",
    "collimate-rl-openenv": ROOT / "plugins" / "collimate-rl-openenv",
    "collimate-rl-slime": ROOT / "plugins" / "collimate-rl-slime",
}
PLUGINS = ("skyrl", "openenv", "slime")
VENV_PLUGIN = "slime"  # the one plugin installed into the fresh venv


def version_of(about: Path) -> str:
    """A distribution's version, from its one source (``__about__.py``)."""
    match = re.search(r'^__version__ = "([^"]+)"', about.read_text(), re.MULTILINE)
    assert match is not None, about
    return match.group(1)


#: the meta distribution follows core (``tools/pins.py``)
META_VERSION = version_of(ROOT / "packages/collimate-rl-core/src/collimate_rl/__about__.py")
PLUGIN_VERSION = version_of(
    ROOT / f"plugins/collimate-rl-{VENV_PLUGIN}/src/collimate_rl/{VENV_PLUGIN}/__about__.py"
)


def run(cmd: list[str], *, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run outside the workspace: no PYTHONPATH, no plugin switches inherited."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
        and not k.startswith("COLLIMATE_RL_")
    }
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{cmd} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}"
    return out


def normalised(name: str) -> str:
    return name.replace("-", "_")


@pytest.fixture(scope="module")
def dist_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every distribution built once: sdist, then the wheel built *from* the sdist
    (so an sdist missing a file fails here)."""
    out = tmp_path_factory.mktemp("dist")
    for source in DISTRIBUTIONS.values():
        run(
            [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)],
            cwd=out,
        )
    return out


def wheel(dist_dir: Path, name: str) -> Path:
    (found,) = dist_dir.glob(f"{normalised(name)}-*-py3-none-any.whl")
    return found


def sdist(dist_dir: Path, name: str) -> Path:
    (found,) = dist_dir.glob(f"{normalised(name)}-*.tar.gz")
    return found


def wheel_metadata(path: Path) -> tuple[list[str], email.message.Message, str]:
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(zf.read(f"{info}/METADATA").decode())
        eps = (
            zf.read(f"{info}/entry_points.txt").decode()
            if f"{info}/entry_points.txt" in names
            else ""
        )
    return names, meta, eps


@pytest.fixture(scope="module")
def venv(dist_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with ``collimate-rl[slime]`` installed from the built wheels only."""
    home = tmp_path_factory.mktemp("venv")
    env_dir = home / "env"
    run([sys.executable, "-m", "venv", str(env_dir)], cwd=home)
    python = env_dir / "bin" / "python"
    # Third-party dependencies come from the configured package index; ours only
    # from the freshly built wheels (--no-index), never from an index.
    _, core_meta, _ = wheel_metadata(wheel(dist_dir, "collimate-rl-core"))
    third_party = [r for r in core_meta.get_all("Requires-Dist", []) if "extra ==" not in r]
    run([str(python), "-m", "pip", "install", "--quiet", "--no-compile", *third_party], cwd=home)
    run(
        [
            str(python), "-m", "pip", "install", "--quiet", "--no-compile", "--no-index",
            "--find-links", str(dist_dir), f"collimate-rl[{VENV_PLUGIN}]=={META_VERSION}",
        ],
        cwd=home,
    )  # fmt: skip
    return env_dir


def test_every_distribution_builds_a_wheel_and_an_sdist(dist_dir: Path) -> None:
    for name in DISTRIBUTIONS:
        assert wheel(dist_dir, name).stat().st_size > 0
        with tarfile.open(sdist(dist_dir, name)) as tf:
            members = {m.split("/", 1)[1] for m in tf.getnames() if "/" in m}
        assert {"pyproject.toml", "README.md", "CHANGELOG.md"} <= members, name


def test_core_wheel_owns_the_package_root(dist_dir: Path) -> None:
    names, meta, eps = wheel_metadata(wheel(dist_dir, "collimate-rl-core"))
    for required in (
        "__init__.py",
        "py.typed",
        "cli.py",
        "plugins/manager.py",
        "plugins/hookspecs.py",
    ):
        assert f"collimate_rl/{required}" in names, required
    assert "collimate = collimate_rl.cli:main" in eps
    assert not any(n.startswith(f"collimate_rl/{p}/") for p in PLUGINS for n in names)
    assert meta["Requires-Python"] == ">=3.10"


#: Files a plugin wheel puts at site-packages' root besides its subpackage:
#: the SkyRL plugin's auto-registration (a .pth and the hook module it imports).
ROOT_FILES = {
    "skyrl": {"collimate_rl_skyrl_autoregister.pth", "_collimate_rl_skyrl_autoregister.py"},
}


@pytest.mark.parametrize("plugin", PLUGINS)
def test_plugin_wheel_ships_only_its_subpackage(dist_dir: Path, plugin: str) -> None:
    names, meta, eps = wheel_metadata(wheel(dist_dir, f"collimate-rl-{plugin}"))
    code = [n for n in names if not n.split("/")[0].endswith(".dist-info")]
    root = ROOT_FILES.get(plugin, set())
    assert root <= set(code), (plugin, code)
    code = [n for n in code if n not in root]
    assert code and all(n.startswith(f"collimate_rl/{plugin}/") for n in code), code
    assert f"collimate_rl/{plugin}/plugin.py" in code
    assert f"collimate_rl/{plugin}/py.typed" in code
    assert "[collimate_rl]" in eps and f"{plugin} = collimate_rl.{plugin}.plugin" in eps
    requires = meta.get_all("Requires-Dist", [])
    assert any(r.startswith("collimate-rl-core") and "<" in r for r in requires), requires


@pytest.mark.parametrize("plugin", PLUGINS)
def test_plugin_sdist_ships_its_tests(dist_dir: Path, plugin: str) -> None:
    with tarfile.open(sdist(dist_dir, f"collimate-rl-{plugin}")) as tf:
        names = tf.getnames()
    assert any(n.endswith(f"tests/test_{plugin}_plugin.py") for n in names), names


#: the meta wheel's only files: the upgrade check (packages/collimate-rl/src)
META_FILES = {"collimate_rl_upgrade_check.pth", "_collimate_rl_upgrade_check.py"}


def test_meta_wheel_is_metadata_with_extras(dist_dir: Path) -> None:
    names, meta, _ = wheel_metadata(wheel(dist_dir, "collimate-rl"))
    code = {n for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert code == META_FILES, names
    assert set(meta.get_all("Provides-Extra", [])) >= {"skyrl", "openenv", "slime", "demo", "all"}
    requires = meta.get_all("Requires-Dist", [])
    for plugin in PLUGINS:
        assert any(
            r.startswith(f"collimate-rl-{plugin}") and f"extra == '{plugin}'" in r for r in requires
        ), (plugin, requires)


def test_fresh_venv_imports_core_and_the_plugin_from_site_packages(venv: Path) -> None:
    code = (
        "import json, collimate_rl, collimate_rl.slime;"
        "print(json.dumps([collimate_rl.__file__, collimate_rl.slime.__file__,"
        " collimate_rl.slime.__version__]))"
    )
    out = run([str(venv / "bin" / "python"), "-c", code], cwd=venv)
    core_file, plugin_file, version = json.loads(out.stdout)
    assert Path(core_file).is_relative_to(venv) and Path(plugin_file).is_relative_to(venv)
    assert Path(plugin_file).parent.parent == Path(core_file).parent  # one merged package dir
    assert version == PLUGIN_VERSION


def test_fresh_venv_has_only_the_installed_plugin(venv: Path) -> None:
    code = (
        "import importlib.util as u;"
        "print(','.join(p for p in ('skyrl', 'openenv', 'slime')"
        " if u.find_spec('collimate_rl.' + p)))"
    )
    out = run([str(venv / "bin" / "python"), "-c", code], cwd=venv)
    assert out.stdout.strip() == VENV_PLUGIN


def test_fresh_venv_discovers_the_plugin_by_entry_point(venv: Path) -> None:
    code = (
        "import json; from collimate_rl import get_plugin_manager;"
        "pm = get_plugin_manager();"
        "print(json.dumps([[pm.get_name(p), d.project_name, d.version]"
        " for p, d in pm.list_plugin_distinfo()]))"
    )
    out = run([str(venv / "bin" / "python"), "-c", code], cwd=venv)
    assert json.loads(out.stdout) == [["slime", "collimate-rl-slime", PLUGIN_VERSION]]


def test_fresh_venv_collimate_plugins_command(venv: Path) -> None:
    out = run([str(venv / "bin" / "collimate"), "plugins", "--json"], cwd=venv)
    rows = {row["plugin"]: row for row in json.loads(out.stdout)}
    assert rows["slime"]["distribution"] == "collimate-rl-slime"
    assert rows["slime"]["announcements"][0]["name"] == "collimate-rl-slime"
    assert rows["collimate_rl.plugins.builtin.core"]["announcements"][0]["name"] == (
        "collimate-rl-core"
    )
    assert not {"skyrl", "openenv"} & set(rows)
    text = run([str(venv / "bin" / "collimate"), "plugins"], cwd=venv).stdout
    assert "collimate-rl-slime" in text and "entry point 'slime'" in text
