"""The root README's "Install" section, run word for word.

The wheelhouse is built as ``hatch run build-all`` builds it (its commands,
read from ``hatch.toml``). Then each ``pip install --find-links dist
"collimate-rl[<extra>]"`` line of the README runs in a fresh venv whose pip
sees only that wheelhouse and the package index: no pip configuration file
(``PIP_CONFIG_FILE=/dev/null``), no ``PIP_*`` variable, ``--isolated``
(and ``--no-compile``: see ``NO_COMPILE``). The plugin imports there,
``collimate serve --help`` runs, and nothing heavy (torch) came along.

Then the upgrade from the published single-package ``collimate-rl``: pip
installs it from the index, and

* the README's documented path (uninstall it, then install) gives a working
  install;
* the in-place ``pip install -U`` the README warns about leaves core's files
  deleted (pip uninstalls the old release after writing core); the meta
  distribution's check then prints the repair command at the next Python
  start, and that command, with the README's ``--find-links dist``, gives a
  working install.

The README's lines are parsed out of it, so editing them changes what runs.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from collimate_rl.client import CollimateClient
from collimate_rl.testing.procs import stop_process

if sys.version_info >= (3, 11):
    import tomllib
else:  # core depends on tomli there
    import tomli as tomllib

pytestmark = [pytest.mark.slow, pytest.mark.packaging]

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: the published single-package releases the upgrade starts from
PUBLISHED = ("0.8.0", "0.5.0")
#: what each extra must make importable (besides core)
IMPORTS = {
    "trl": ["collimate_rl.trl"],
    "verl": ["collimate_rl.verl"],
    "skyrl": ["collimate_rl.skyrl", "skyrl_gym"],
    "openenv": ["collimate_rl.openenv"],
    "slime": ["collimate_rl.slime"],
    "ray": ["collimate_rl.ray"],
    "demo": ["rich"],
    "browser": ["playwright"],
    "all": [
        "collimate_rl.trl",
        "collimate_rl.verl",
        "collimate_rl.skyrl",
        "collimate_rl.openenv",
        "collimate_rl.slime",
        "collimate_rl.ray",
        "rich",
        "playwright",
    ],
}
#: installed but not importable as such: openenv-collimate-code needs the OpenEnv
#: line the user picks (openenv or openenv-core), which no extra brings
INSTALLED = {"openenv": ["collimate_code"], "all": ["collimate_code"]}
#: never pulled by any extra (the TRL and verl plugins do not import their framework)
HEAVY = ("torch", "transformers", "ray", "trl", "verl")
CHECK_MESSAGE = "collimate-rl: this environment is missing files of"


def version_of(about: Path) -> str:
    match = re.search(r'^__version__ = "([^"]+)"', about.read_text(), re.MULTILINE)
    assert match is not None, about
    return match.group(1)


CORE_VERSION = version_of(ROOT / "packages/collimate-rl-core/src/collimate_rl/__about__.py")


# --- the README ---------------------------------------------------------------


def install_section() -> str:
    text = README.read_text()
    match = re.search(r"^## Install\n(.*?)^## ", text, re.MULTILINE | re.DOTALL)
    assert match, "README.md has no '## Install' section"
    return match.group(1)


def code_blocks(section: str) -> list[list[list[str]]]:
    """Each ```bash block of the section: its commands, as words (comments dropped)."""
    blocks = re.findall(r"^```bash\n(.*?)^```", section, re.MULTILINE | re.DOTALL)
    return [
        [words for line in block.splitlines() if (words := shlex.split(line, comments=True))]
        for block in blocks
    ]


def readme_commands() -> list[list[str]]:
    return [cmd for block in code_blocks(install_section()) for cmd in block]


def install_lines() -> dict[str, list[str]]:
    """extra -> the README's ``pip install --find-links dist "collimate-rl[extra]"``."""
    found = {}
    for words in readme_commands():
        if words[:4] == ["pip", "install", "--find-links", "dist"] and len(words) == 5:
            match = re.fullmatch(r"collimate-rl\[([a-z]+)\]", words[4])
            if match:
                found[match.group(1)] = words
    return found


def upgrade_block() -> list[list[str]]:
    """The README's documented upgrade: the block that uninstalls the old release."""
    (block,) = [
        b for b in code_blocks(install_section()) if ["pip", "uninstall", "-y", "collimate-rl"] in b
    ]
    return block


def in_place_upgrade() -> list[str]:
    """The in-place upgrade the README warns about, as it quotes it."""
    match = re.search(r"`(pip install -U --find-links dist [^`]+)`", install_section())
    assert match, "the README no longer quotes the in-place upgrade"
    return shlex.split(match.group(1))


INSTALL_LINES = install_lines()
#: ``hatch run build-all``'s commands, one per distribution
SCRIPTS = tomllib.loads((ROOT / "hatch.toml").read_text())["envs"]["default"]["scripts"]
BUILD_ALL: list[str] = SCRIPTS["build-all"]


# --- venvs that see only the wheelhouse and the index -------------------------


def clean_env(venv: Path | None = None) -> dict[str, str]:
    """No pip configuration, no ``PIP_*``, nothing pointing into the workspace;
    the venv's bin first on PATH (as if activated)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PIP_", "COLLIMATE", "PYTHON", "UV_"))
        and k not in ("VIRTUAL_ENV", "CONDA_PREFIX")
    }
    env["PIP_CONFIG_FILE"] = os.devnull  # pip then reads no configuration file at all
    if venv is not None:
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(venv)
    return env


def run(
    cmd: list[str], *, cwd: Path, venv: Path | None = None, timeout: float = 600, check: bool = True
) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(
        cmd, cwd=cwd, env=clean_env(venv), capture_output=True, text=True, timeout=timeout
    )
    if check:
        assert out.returncode == 0, f"{cmd} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}"
    return out


#: Added to every ``pip install`` here: pip's byte-compiling of what it
#: installs changes no file an import reads, yet about doubles pip's CPU
#: (25 s against 15 s for ``[all]`` on the CI machine), and this lane runs
#: on a machine whose CPUs are already busy.
NO_COMPILE = "--no-compile"


def pip_words(venv: Path, words: list[str]) -> list[str]:
    """A README ``pip ...`` line for this venv: its own pip, plus ``--isolated``
    (no environment variables, no user configuration) and, for an install,
    ``--no-compile``; every word kept."""
    assert words[0] == "pip", words
    options = [NO_COMPILE] if words[1] == "install" else []
    return [
        str(venv / "bin" / "pip"), "--isolated", "--disable-pip-version-check",
        words[1], *options, *words[2:],
    ]  # fmt: skip


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding ``dist/``, built by hatch.toml's ``build-all`` commands
    (``python -m build --no-isolation`` per distribution): the README's pip
    lines run here, so their ``dist`` is this wheelhouse."""
    home = tmp_path_factory.mktemp("install-by-name")
    assert BUILD_ALL, "hatch.toml has no build-all"
    for command in BUILD_ALL:
        words = shlex.split(command.replace("{args:dist}", str(home / "dist")))
        assert words[0] == "python", words
        run([sys.executable, *words[1:]], cwd=ROOT, timeout=300)
    return home


def new_venv(home: Path, name: str) -> Path:
    venv = home / name
    run([sys.executable, "-m", "venv", str(venv)], cwd=home)
    return venv


def probe(
    venv: Path, home: Path, modules: list[str], installed: list[str]
) -> subprocess.CompletedProcess[str]:
    """Import core and ``modules`` in the venv, find ``installed``; report
    versions, files and heavy modules."""
    code = (
        "import importlib, importlib.util, json, sys\n"
        "import collimate_rl\n"
        f"mods = {modules!r}\n"
        "files = [importlib.import_module(m).__file__ for m in mods]\n"
        f"files += [importlib.util.find_spec(m).origin for m in {installed!r}]\n"
        "from collimate_rl import connect, grade\n"  # core's API, not a namespace package
        f"heavy = [m for m in {HEAVY!r} if importlib.util.find_spec(m)]\n"
        "print(json.dumps([collimate_rl.__version__, collimate_rl.__file__, files, heavy]))\n"
    )
    return run([str(venv / "bin" / "python"), "-c", code], cwd=home, venv=venv)


def assert_works(
    venv: Path, home: Path, modules: list[str], installed: list[str] | None = None
) -> None:
    out = probe(venv, home, modules, installed or [])
    version, core_file, files, heavy = json.loads(out.stdout)
    assert version == CORE_VERSION
    assert all(Path(f).is_relative_to(venv) for f in [core_file, *files]), (core_file, files)
    assert heavy == [], f"an extra pulled {heavy}"
    assert CHECK_MESSAGE not in out.stderr, out.stderr
    help_text = run([str(venv / "bin" / "collimate"), "serve", "--help"], cwd=home, venv=venv)
    assert "usage: collimate serve" in help_text.stdout
    for flag in ("--port", "--socket"):  # the flags the README names
        assert flag in help_text.stdout, flag


# --- the README itself ------------------------------------------------------------


def test_readme_installs_every_extra_of_the_meta_distribution() -> None:
    meta = tomllib.loads((ROOT / "packages/collimate-rl/pyproject.toml").read_text())
    extras = set(meta["project"]["optional-dependencies"])
    assert {"skyrl", "openenv", "slime", "trl", "verl", "ray"} <= extras
    assert set(INSTALL_LINES) == extras, sorted(INSTALL_LINES)
    assert ["hatch", "run", "build-all"] in readme_commands()
    assert any(words[:2] == ["collimate", "serve"] for words in readme_commands())
    assert any("COLLIMATE_SERVE_URL=" in " ".join(words) for words in readme_commands())


def test_wheelhouse_versions_are_final_and_above_the_published_releases(home: Path) -> None:
    wheels = sorted((home / "dist").glob("*.whl"))
    assert len(wheels) == len(BUILD_ALL), wheels
    for wheel in wheels:
        version = wheel.name.split("-")[1]
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"{wheel.name}: not a final release"
        if wheel.name.startswith("collimate_rl-"):
            published = [tuple(map(int, v.split("."))) for v in PUBLISHED]
            assert tuple(map(int, version.split("."))) > max(published), wheel.name


# --- a fresh install, one venv per README line ---------------------------------------


@pytest.fixture(scope="module")
def fresh(home: Path) -> dict[str, Future[Path]]:
    """extra -> the venv its README line installed into, each line in a fresh
    venv of its own. Two run at a time: pip mostly waits on the index."""

    def install(extra: str) -> Path:
        venv = new_venv(home, f"fresh-{extra}")
        run(pip_words(venv, INSTALL_LINES[extra]), cwd=home, venv=venv)
        return venv

    with ThreadPoolExecutor(max_workers=2) as pool:
        return {extra: pool.submit(install, extra) for extra in sorted(INSTALL_LINES)}


@pytest.mark.timeout(900)  # the first one waits for every install
@pytest.mark.parametrize("extra", sorted(IMPORTS))
def test_readme_install_line_in_a_fresh_venv(
    home: Path, fresh: dict[str, Future[Path]], extra: str
) -> None:
    assert extra in fresh, f"the README has no install line for [{extra}]"
    venv = fresh[extra].result()  # raises what the install raised
    assert_works(venv, home, IMPORTS[extra], INSTALLED.get(extra))


@pytest.fixture
def served(
    home: Path, fresh: dict[str, Future[Path]]
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``collimate serve --port 0`` from the venv of the README's TRL line, and
    the URL it prints."""
    venv = fresh["trl"].result()
    server = subprocess.Popen(
        [str(venv / "bin" / "collimate"), "serve", "--port", "0"],
        cwd=home,
        env=clean_env(venv),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = ""
        assert server.stdout is not None
        for line in server.stdout:
            match = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
            if match:
                url = match.group(1)
                break
        yield server, url
    finally:
        stop_process(server)  # type: ignore[arg-type]


@pytest.mark.timeout(900)
def test_collimate_serve_prints_the_url_it_answers_on(
    served: tuple[subprocess.Popen[str], str],
) -> None:
    _, url = served
    assert url, "collimate serve printed no 'listening on http://127.0.0.1:...' line"
    with CollimateClient(url, timeout=10, retries=0) as client:
        assert client.health()


# --- upgrading from the published single-package release -----------------------------


def published_venv(home: Path, version: str, name: str) -> Path:
    venv = new_venv(home, name)
    run(pip_words(venv, ["pip", "install", f"collimate-rl=={version}"]), cwd=home, venv=venv)
    code = "import collimate_rl as c; print(c.__version__)"
    old = run([str(venv / "bin" / "python"), "-c", code], cwd=home, venv=venv)
    assert old.stdout.strip() == version
    return venv


def test_documented_upgrade_from_the_published_release(home: Path) -> None:
    venv = published_venv(home, PUBLISHED[0], "upgrade-documented")
    block = upgrade_block()
    for words in block:
        run(pip_words(venv, words), cwd=home, venv=venv)
    (install,) = [w for w in block if w[:2] == ["pip", "install"]]
    extra = re.fullmatch(r"collimate-rl\[([a-z]+)\]", install[-1])
    assert extra, install
    assert_works(venv, home, IMPORTS[extra.group(1)])


@pytest.mark.parametrize("version", PUBLISHED)
def test_in_place_upgrade_says_how_to_repair_and_the_repair_works(home: Path, version: str) -> None:
    venv = published_venv(home, version, f"upgrade-in-place-{version}")
    words = in_place_upgrade()
    extra = re.fullmatch(r"collimate-rl\[([a-z]+)\]", words[-1])
    assert extra, words
    extras = [extra.group(1)]
    if version != PUBLISHED[0]:  # also a plugin whose __init__.py the old release owned
        extras.append("slime")
        words = [*words[:-1], f"collimate-rl[{','.join(extras)}]"]
    run(pip_words(venv, words), cwd=home, venv=venv)

    # What pip leaves: core's __init__.py (and more) deleted by the old release's uninstall.
    python = str(venv / "bin" / "python")
    code = "from collimate_rl import connect"
    broken = run([python, "-c", code], cwd=home, venv=venv, check=False)
    assert broken.returncode != 0, "the in-place upgrade no longer breaks: update the README"
    assert CHECK_MESSAGE in broken.stderr, broken.stderr
    assert broken.stderr.count(CHECK_MESSAGE) == 1, broken.stderr
    (repair,) = [line.strip() for line in broken.stderr.splitlines() if " -m pip install " in line]
    assert repair.startswith(f"{python} -m pip install --force-reinstall --no-deps "), repair
    assert f"collimate-rl-core=={CORE_VERSION}" in repair
    if "slime" in extras:
        assert "collimate-rl-slime==" in repair, repair

    # The README: run it "with the --find-links dist (or index) you upgraded with".
    cmd = shlex.split(repair)
    assert cmd[1:3] == ["-m", "pip"], cmd
    assert cmd[3] == "install", cmd
    isolated = [*cmd[:3], "--isolated", "--disable-pip-version-check", "install", NO_COMPILE]
    isolated += cmd[4:]
    run([*isolated, "--find-links", "dist"], cwd=home, venv=venv)
    modules = [m for e in extras for m in IMPORTS[e]]
    assert_works(venv, home, modules)
