"""SandboxFusion's own runner tests as a conformance suite for the local
backend's SandboxFusion-compatible endpoints (``/run_code``,
``/run_jupyter``).

SandboxFusion (github.com/bytedance/SandboxFusion) tests its runners with
``sandbox/tests/runners/test_*.py``: each posts a request to its app
in-process (``TestClient(app)``) and asserts on the answer. Those files are
run twice, as published, by SandboxFusion's own interpreter:

* **SandboxFusion's side**: in-process against its app, its ``local``
  config (``isolation: none``), inside a bubblewrap namespace with no
  network (a test can reach no host) and a private ``/mnt`` (its
  ``fetch_files`` test writes ``/mnt/b``: never on the host). What passes
  there depends only on its commit and this machine's toolchains, so the
  outcome is kept on disk under (commit, :func:`toolchain_fingerprint`)
  and paid once per machine.
* **our side**: the same files with ``sandbox_fusion_redirect.py`` loaded,
  which turns ``TestClient(app)`` into an httpx client posting the same
  paths and JSON to a local backend on 127.0.0.1 (one started here, with
  its default isolation, unless ``--ours`` names one).

Never run: ``test_isolation.py`` (it contacts a host outside this machine)
and the GPU ones (``test_cuda.py``, ``test_python_gpu.py``: no GPU here).
They are deleted from the exported tree, so no invocation can collect
them. Go runs with ``GOPROXY=off GOTOOLCHAIN=local`` on both sides.

The export and SandboxFusion's venv come from
``benchmarks/_sandbox_fusion_peer.py`` (its HEAD tree exported once, its
Python dependencies from PyPI pinned to its ``poetry.lock``; see that
module for its ``local`` config and conda quirks). The venv here adds its
test tools (pytest, httpx) and what its jupyter runtime imports
(``jupyter_client``, ``ipykernel``): the ``python3`` kernel its
``/run_jupyter`` starts. Its python runtime's other packages (its image's
``runtime/python/requirements.txt``: numpy, matplotlib, torch...) are not
installed, on either side.

Run as a script for the report (per-file counts on both sides, then every
test that passes on SandboxFusion and fails on ours)::

    python integration-tests/compat/sandbox_fusion_suite.py [--repo DIR] [--json OUT]

with ``$COLLIMATE_SANDBOX_FUSION_REPO`` (or ``--repo``) naming a clone of
SandboxFusion, bare or not. ``integration-tests/test_packaging_sandbox_fusion_suite.py``
runs it in CI's packaging lane.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.util
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
PEER_FILE = HERE.parent.parent / "benchmarks" / "_sandbox_fusion_peer.py"
REDIRECT_PLUGIN = "sandbox_fusion_redirect"

#: Where the runner tests are, in SandboxFusion's tree.
SUITE_DIR = "sandbox/tests/runners"
#: Deleted from the export before anything runs: it contacts a host
#: outside this machine (never run, not even once).
NEVER_RUN = ("test_isolation.py",)
#: Deleted too: they need a GPU.
NEEDS_GPU = ("test_cuda.py", "test_python_gpu.py")
#: Files of languages no registry here supplies (``toolchains``' unsupplied
#: ones): SandboxFusion, missing the compiler too, answers ``Failed`` (its
#: shell's exit 127), which some of them expect of a wrong program; ours
#: answers ``SandboxError`` by design (the backend's failure, never the
#: program's), so what passes there is not asked of ours.
UNSUPPLIED_FILES = {"test_julia.py": "julia", "test_lean.py": "lean", "test_swift.py": "swift"}
#: Added to SandboxFusion's venv: its test tools (pytest and httpx are its
#: dev dependencies, pinned by its lock) and its jupyter runtime's imports.
TEST_REQUIREMENTS = (
    "pytest",
    "pytest-asyncio",
    "pytest-timeout",
    "httpx",
    "jupyter_client",
    "ipykernel",
)
#: Seconds one test may take on either side (its own timeouts are seconds).
TEST_TIMEOUT_S = 240
#: What SandboxFusion's runners start, found on PATH: what its outcome
#: here depends on besides its commit (see :func:`toolchain_fingerprint`).
TOOLS = (
    "bash", "g++", "gcc", "go", "java", "javac", "node", "npm", "npx", "tsx", "php",
    "rustc", "lua", "perl", "ruby", "Rscript", "scala", "scalac", "kotlin", "kotlinc",
    "dmd", "ldc2", "dotnet", "mcs", "mono", "racket", "iverilog", "vvp", "julia",
    "swiftc", "lake", "lean", "sqlite3", "bwrap",
)  # fmt: skip
#: The environment both sides run in, beyond this process's: no module
#: proxy and no toolchain download for Go, SandboxFusion's local config.
SUITE_ENV = {"GOPROXY": "off", "GOTOOLCHAIN": "local", "SANDBOX_CONFIG": "local"}
#: Part of the cache key of SandboxFusion's outcome: raised whenever the way
#: its side is run changes (arguments, environment, isolation, report).
RUN_VERSION = 1


def load_peer() -> ModuleType:
    """``benchmarks/_sandbox_fusion_peer.py`` (export, venv), loaded from its file."""
    spec = importlib.util.spec_from_file_location("_sandbox_fusion_peer", PEER_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@dataclass
class SideResult:
    """One side's outcome: file -> test name -> ``passed`` / ``failed`` /
    ``error`` / ``skipped``, and what the run cost."""

    outcomes: dict[str, dict[str, str]]
    cpu_s: float
    wall_s: float
    meta: dict[str, Any] = field(default_factory=dict)

    def passed(self, file: str) -> set[str]:
        return {t for t, o in self.outcomes.get(file, {}).items() if o == "passed"}

    def to_json(self) -> dict[str, Any]:
        return {
            "outcomes": self.outcomes,
            "cpu_s": self.cpu_s,
            "wall_s": self.wall_s,
            "meta": self.meta,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> SideResult:
        return cls(raw["outcomes"], raw["cpu_s"], raw["wall_s"], raw.get("meta", {}))


def suite_checkout(peer: ModuleType, repo: Path) -> Path:
    """SandboxFusion's HEAD tree, exported once into the cache, less the
    files that must never run."""
    checkout: Path = peer.sandbox_fusion_checkout(repo, peer.CACHE / "suite-checkout")
    for name in (*NEVER_RUN, *NEEDS_GPU):
        with contextlib.suppress(FileNotFoundError):
            (checkout / SUITE_DIR / name).unlink()
    return checkout


def suite_files(checkout: Path) -> list[str]:
    """The runner test files to run (paths relative to the checkout)."""
    files = sorted(p.name for p in (checkout / SUITE_DIR).glob("test_*.py"))
    assert not set(files) & {*NEVER_RUN, *NEEDS_GPU}, files
    return [f"{SUITE_DIR}/{name}" for name in files]


def toolchain_fingerprint(venv: Path) -> str:
    """What SandboxFusion's outcome depends on besides its commit: each
    tool it starts (where PATH finds it, what that leads to, its size and
    mtime), its venv and :data:`RUN_VERSION`."""
    parts: list[Any] = [str(venv), RUN_VERSION]
    for tool in TOOLS:
        found = shutil.which(tool)
        if found is None:
            parts.append([tool, None])
            continue
        real = os.path.realpath(found)
        st = os.stat(real)
        parts.append([tool, found, real, st.st_size, st.st_mtime_ns])
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


def parse_junit(path: Path) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """A JUnit XML report as file -> test -> outcome, and ``file::test`` ->
    the first line of why, for those that did not pass."""
    outcomes: dict[str, dict[str, str]] = {}
    why: dict[str, str] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        file = case.get("classname", "").rsplit(".", 1)[-1] + ".py"
        name = case.get("name", "?")
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed"}.get(child.tag, child.tag)
                why[f"{file}::{name}"] = (
                    (child.get("message") or "").splitlines()[0][:300]
                    if child.get("message")
                    else ""
                )
                break
        outcomes.setdefault(file, {})[name] = outcome
    return outcomes, why


_CPUACCT = "/sys/fs/cgroup/cpuacct"


def _rusage_cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@contextlib.contextmanager
def cpu_meter() -> Iterator[dict[str, float]]:
    """The CPU seconds of this process and of everything it starts meanwhile
    (into the yielded dict's ``cpu_s`` on leaving): a cpuacct cgroup (v1)
    nested in this process's own, so a server's sandboxes (whose cgroups the
    backend makes under the server's) and processes nobody waits for count
    too, and CI's own accounting above still sees it all. Without cgroup v1
    cpuacct (or root): this process's and its reaped children's rusage."""
    out: dict[str, float] = {}
    home = cgroup = None
    with contextlib.suppress(OSError, StopIteration):
        with open("/proc/self/cgroup") as fh:
            path = next(
                line.rstrip("\n").split(":", 2)[2]
                for line in fh
                if "cpuacct" in line.split(":", 2)[1].split(",")
            )
        home = os.path.join(_CPUACCT, path.lstrip("/"))
        cgroup = os.path.join(home, f"collimate-sf-suite-{os.getpid()}")
        os.makedirs(cgroup, exist_ok=True)
        with open(os.path.join(cgroup, "cgroup.procs"), "w") as fh:
            fh.write(str(os.getpid()))

    def usage() -> float:
        if cgroup is None:
            return _rusage_cpu()
        with open(os.path.join(cgroup, "cpuacct.usage")) as fh:
            return int(fh.read()) / 1e9

    start = usage()
    try:
        yield out
    finally:
        out["cpu_s"] = usage() - start
        if cgroup is not None and home is not None:
            with contextlib.suppress(OSError):
                with open(os.path.join(home, "cgroup.procs"), "w") as fh:
                    fh.write(str(os.getpid()))
                os.rmdir(cgroup)


def run_pytest(
    venv: Path,
    checkout: Path,
    files: list[str],
    junit: Path,
    *,
    env: dict[str, str],
    isolated: bool,
    plugin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """SandboxFusion's interpreter running ``files`` with pytest (its own
    ``addopts``, coverage, left out), a JUnit report to ``junit``.
    ``isolated``: in a bubblewrap namespace with no network and a private
    ``/mnt`` (SandboxFusion's side, whose runs are processes of this host)."""
    argv = [
        str(venv / "bin" / "python"),
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-o",
        "addopts=",
        "-o",
        f"timeout={TEST_TIMEOUT_S}",
        "-q",
        "-rN",
        f"--junitxml={junit}",
    ]
    if plugin is not None:
        argv += ["-p", plugin]
    argv += files
    if isolated:
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise RuntimeError("bubblewrap (bwrap) is needed to run SandboxFusion's side")
        argv = [
            bwrap,
            "--dev-bind", "/", "/",
            "--tmpfs", "/mnt",
            "--unshare-net",
            "--die-with-parent",
            "--chdir", str(checkout),
            "--",
            *argv,
        ]  # fmt: skip
    return subprocess.run(
        argv,
        cwd=checkout,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )


def _suite_env(peer: ModuleType) -> dict[str, str]:
    """This process's environment for SandboxFusion's pytest: less what
    points at another interpreter's packages, and less the pytest settings
    of a run this one is part of (CI's ``PYTEST_ADDOPTS`` loads a plugin of
    its own from a ``PYTHONPATH`` SandboxFusion's interpreter does not get)."""
    env: dict[str, str] = {
        k: v for k, v in peer._clean_env().items() if not k.startswith("PYTEST_")
    }
    env.pop("COLLIMATE_CI_CPU_DIR", None)
    env.update(SUITE_ENV)
    return env


def _result(
    proc: subprocess.CompletedProcess[str], junit: Path, cpu: float, wall: float
) -> SideResult:
    if not junit.exists():
        raise RuntimeError(
            f"pytest wrote no report (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n"
            f"{proc.stderr[-3000:]}"
        )
    outcomes, why = parse_junit(junit)
    return SideResult(outcomes, cpu, wall, {"exit": proc.returncode, "why": why})


def sandbox_fusion_side(
    peer: ModuleType, checkout: Path, venv: Path, *, refresh: bool = False
) -> SideResult:
    """SandboxFusion's own outcome on this machine, from the cache when its
    (commit, toolchain fingerprint) was run here before."""
    commit = peer.checkout_commit(checkout)
    key = f"{commit[:12]}-{toolchain_fingerprint(venv)}"
    cached = peer.CACHE / "suite-results" / f"sandbox-fusion-{key}.json"
    if not refresh:
        with contextlib.suppress(OSError, ValueError, KeyError):
            result = SideResult.from_json(json.loads(cached.read_text()))
            result.meta["cached"] = str(cached)
            return result
    files = suite_files(checkout)
    with tempfile.TemporaryDirectory(prefix="sf-suite-") as tmp:
        junit = Path(tmp) / "sandbox-fusion.xml"
        t0 = time.perf_counter()
        with cpu_meter() as cpu:
            proc = run_pytest(venv, checkout, files, junit, env=_suite_env(peer), isolated=True)
        result = _result(proc, junit, cpu["cpu_s"], time.perf_counter() - t0)
    result.meta.update(commit=commit, key=key)
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp_file = cached.with_suffix(f".{os.getpid()}.tmp")
    tmp_file.write_text(json.dumps(result.to_json(), indent=1))
    os.replace(tmp_file, cached)
    return result


@contextlib.contextmanager
def _our_server(url: str | None) -> Iterator[str]:
    if url is not None:
        yield url
        return
    from collimate_rl.local_backend import LocalCollimateBackend

    with LocalCollimateBackend() as backend:
        yield backend.base_url


def our_side(peer: ModuleType, checkout: Path, venv: Path, url: str | None = None) -> SideResult:
    """The same files against the local backend at ``url`` (one started
    here, and stopped before the CPU is read, when None). The CPU counts the
    server, its sandboxes and the pytest run (see :func:`cpu_meter`); a
    server named by ``url`` is not counted."""
    files = suite_files(checkout)
    env = _suite_env(peer)
    env["PYTHONPATH"] = str(HERE)
    with tempfile.TemporaryDirectory(prefix="sf-suite-") as tmp:
        junit = Path(tmp) / "ours.xml"
        t0 = time.perf_counter()
        with cpu_meter() as cpu, _our_server(url) as base_url:
            env["COLLIMATE_SF_TARGET"] = base_url
            proc = run_pytest(
                venv, checkout, files, junit, env=env, isolated=False, plugin=REDIRECT_PLUGIN
            )
        return _result(proc, junit, cpu["cpu_s"], time.perf_counter() - t0)


def failing_on_ours(sf: SideResult, ours: SideResult) -> dict[str, list[str]]:
    """file -> the tests that pass on SandboxFusion and not on ours (but in
    :data:`UNSUPPLIED_FILES`)."""
    gaps: dict[str, list[str]] = {}
    for file in sorted(set(sf.outcomes) - set(UNSUPPLIED_FILES)):
        missing = sorted(sf.passed(file) - ours.passed(file))
        if missing:
            gaps[file] = missing
    return gaps


def report(sf: SideResult, ours: SideResult) -> str:
    """Per-file counts on both sides, the costs, and the gaps."""
    lines = [f"{'file':<28} {'SandboxFusion':>14} {'ours':>10}  passing there, not here"]
    for file in sorted(set(sf.outcomes) | set(ours.outcomes)):
        total = len(sf.outcomes.get(file, {}) or ours.outcomes.get(file, {}))
        gap = sorted(sf.passed(file) - ours.passed(file))
        if file in UNSUPPLIED_FILES and gap:
            gap = [f"(not asked: {UNSUPPLIED_FILES[file]} is SandboxError here by design)"]
        there, here = len(sf.passed(file)), len(ours.passed(file))
        lines.append(f"{file:<28} {there:>6}/{total:<7} {here:>4}/{total:<5}  {', '.join(gap)}")
    sf_total = sum(len(sf.passed(f)) for f in sf.outcomes)
    ours_total = sum(len(ours.passed(f)) for f in ours.outcomes)
    count = sum(len(v) for v in sf.outcomes.values())
    lines.append(f"{'total':<28} {sf_total:>6}/{count:<7} {ours_total:>4}/{count:<5}")
    cached = f" (cached: {sf.meta['cached']})" if sf.meta.get("cached") else ""
    lines.append(
        f"SandboxFusion: {sf.cpu_s:.1f} CPU-s, {sf.wall_s:.1f} s wall{cached}; "
        f"ours: {ours.cpu_s:.1f} CPU-s, {ours.wall_s:.1f} s wall"
    )
    return "\n".join(lines)


def prepare(repo: Path | None) -> tuple[ModuleType, Path, Path]:
    """The peer module, the export and SandboxFusion's venv (with its test tools)."""
    peer = load_peer()
    checkout = suite_checkout(peer, peer.sandbox_fusion_repo(repo))
    venv: Path = peer.ensure_sandbox_fusion_venv(checkout, extra=TEST_REQUIREMENTS)
    return peer, checkout, venv


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", type=Path, default=None, help="SandboxFusion's git repository")
    ap.add_argument(
        "--ours", default=None, help="a running local backend's URL (else one is started)"
    )
    ap.add_argument(
        "--refresh", action="store_true", help="run SandboxFusion's side even if cached"
    )
    ap.add_argument("--json", type=Path, default=None, help="write both sides' outcomes here")
    args = ap.parse_args(argv)
    peer, checkout, venv = prepare(args.repo)
    sf = sandbox_fusion_side(peer, checkout, venv, refresh=args.refresh)
    ours = our_side(peer, checkout, venv, args.ours)
    print(report(sf, ours), flush=True)
    if args.json is not None:
        args.json.write_text(
            json.dumps({"sandbox_fusion": sf.to_json(), "ours": ours.to_json()}, indent=1)
        )
    return 1 if failing_on_ours(sf, ours) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
