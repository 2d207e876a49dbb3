"""ByteDance's SandboxFusion server, run on this machine beside ours, so a
benchmark can measure it in the same run instead of quoting a figure taken
once (not a benchmark: no ``bench_`` prefix).

Everything it needs is made from a local git directory of SandboxFusion
(its HEAD tree exported once) and PyPI (a venv of its own, made once in
``~/.cache/collimate-rl/sandbox-fusion``); nothing outside those two places
is touched, and its source is run as published:

* its ``local`` config already says ``isolation: none`` (no overlayfs,
  cgroups or network namespaces: nothing here needs root or ``sudo``), with
  ``cleanup_process`` and ``restore_bash`` off; the server is started with
  ``SANDBOX_CONFIG=local`` so that stays explicit.
* its python runner asks conda for a ``sandbox-runtime`` env: it walks up
  from its own interpreter to the first directory holding ``condabin`` and
  runs ``source <that>/bin/activate sandbox-runtime && which python``. An
  empty ``condabin`` directory in the venv makes the venv that root, and the
  venv's own ``bin/activate`` (which ignores the env name) answers with the
  venv's interpreter: submitted python runs on the server's own Python (its
  packages, not those of its ``sandbox-runtime`` image env), with no conda
  and no code of ours inside SandboxFusion.
* its app mounts ``docs/build`` (the documentation site its Docker image
  builds with npm) as static files, and Starlette refuses a missing
  directory: the export gets an empty one.
* uvicorn runs with ``--loop asyncio``: under uvloop (what its
  ``uvicorn[standard]`` would pick) its compiles stall on this machine.

As published, its runner calls ``flush()`` on the asyncio pipe it writes
stdin to, which has none: every request with stdin logs that traceback and
goes on (the input was already written, and the pipe is then closed). That
is part of what a request costs there, and is left as it is.

Stdlib only, so a benchmark can import it from any interpreter; run it as a
script for a smoke test (``python benchmarks/_sandbox_fusion_peer.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: Where the venvs live (one per SandboxFusion commit).
CACHE = Path.home() / ".cache" / "collimate-rl" / "sandbox-fusion"

#: Where a checkout made by the smoke goes by default.
DEFAULT_CHECKOUT = CACHE / "checkout"

#: Names SandboxFusion's git repository (a clone of
#: github.com/bytedance/SandboxFusion, bare or not) when ``--repo`` does not.
REPO_ENV = "COLLIMATE_SANDBOX_FUSION_REPO"


def sandbox_fusion_repo(given: Path | None = None) -> Path:
    """SandboxFusion's git repository: ``given``, else ``$COLLIMATE_SANDBOX_FUSION_REPO``;
    SystemExit saying how to get one when neither names a git repository."""
    raw = given or (Path(os.environ[REPO_ENV]) if os.environ.get(REPO_ENV) else None)
    if raw is None or not ((raw / "HEAD").exists() or (raw / ".git").exists()):
        raise SystemExit(
            "SandboxFusion's repository is needed: git clone "
            "https://github.com/bytedance/SandboxFusion and pass its path with --repo "
            f"or ${REPO_ENV} (got {raw})"
        )
    return raw


#: Written into an export last: the commit it holds (its absence means the
#: export did not finish).
COMMIT_MARKER = ".collimate-commit"

#: Written into a venv last: what was installed (its absence or a different
#: content means the install did not finish or the wanted set changed).
READY_MARKER = ".collimate-ready"

#: Imported when the server starts though not in its main dependencies: the
#: dataset registry imports every dataset module at startup, and
#: ``live_code_bench`` imports numpy (a dev dependency in its pyproject).
EXTRA_REQUIREMENTS = ("numpy",)

#: How long the server may take to answer ``/v1/ping`` (it imports
#: transformers and loads its sample datasets first; this machine may be
#: busy).
START_TIMEOUT_S = 180.0


def _commit(repo_git_dir: Path) -> str:
    out = subprocess.run(
        ["git", "-C", str(repo_git_dir), "rev-parse", "HEAD"],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


def checkout_commit(checkout: Path) -> str:
    """The commit an export made by :func:`sandbox_fusion_checkout` holds."""
    return (checkout / COMMIT_MARKER).read_text().strip()


def sandbox_fusion_checkout(repo_git_dir: Path, dest: Path) -> Path:
    """``repo_git_dir``'s HEAD tree exported to ``dest`` (done once: an export
    of the same commit already there is reused, another one is replaced).

    The tree is exported beside ``dest`` and renamed into place, so a run
    stopped halfway never leaves a partial tree that looks finished.
    """
    commit = _commit(repo_git_dir)
    with contextlib.suppress(OSError):
        if checkout_commit(dest) == commit:
            return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        archive = subprocess.Popen(
            ["git", "-C", str(repo_git_dir), "archive", "--format=tar", commit],
            stdout=subprocess.PIPE,
        )
        assert archive.stdout is not None
        untar = subprocess.run(["tar", "-x", "-C", str(tmp)], stdin=archive.stdout)
        archive.stdout.close()
        if archive.wait() != 0 or untar.returncode != 0:
            raise RuntimeError(f"exporting {repo_git_dir} at {commit} failed")
        # Its app mounts the documentation site (built by npm in its image).
        (tmp / "docs" / "build").mkdir(parents=True, exist_ok=True)
        (tmp / COMMIT_MARKER).write_text(commit + "\n")
        tmp.chmod(0o755)  # mkdtemp's 0700 is not what a checkout has
        if dest.exists():
            shutil.rmtree(dest)
        tmp.rename(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _main_dependencies(pyproject: str) -> list[str]:
    """``[tool.poetry.dependencies]`` as pip requirement names with extras
    (poetry's ``^`` ranges left out: the lock file pins the versions)."""
    section = re.search(r"^\[tool\.poetry\.dependencies\]\n(.*?)(?=^\[)", pyproject, re.M | re.S)
    if section is None:
        raise RuntimeError("no [tool.poetry.dependencies] in SandboxFusion's pyproject.toml")
    names = []
    for line in section.group(1).splitlines():
        match = re.match(r"\s*([A-Za-z0-9_.-]+)\s*=\s*(.*)", line)
        if match is None or match.group(1) == "python":
            continue
        extras = re.search(r"extras\s*=\s*\[([^\]]*)\]", match.group(2))
        if extras is not None:
            listed = ",".join(re.findall(r"\"([^\"]+)\"", extras.group(1)))
            names.append(f"{match.group(1)}[{listed}]")
        else:
            names.append(match.group(1))
    return names


def _locked_versions(lock: str) -> list[str]:
    """Every package of ``poetry.lock`` as ``name==version``: the versions its
    authors resolved and ran, used as pip constraints."""
    pins = re.findall(r'^name = "([^"]+)"\nversion = "([^"]+)"', lock, re.M)
    return [f"{name}=={version}" for name, version in pins]


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def ensure_sandbox_fusion_venv(
    checkout: Path, python: str = "python3.11", extra: tuple[str, ...] = ()
) -> Path:
    """A venv with what SandboxFusion's server imports, for the checkout's
    commit (made once, in ``~/.cache/collimate-rl/sandbox-fusion``).

    Its main dependencies from ``pyproject.toml`` (plus numpy, which it
    imports at startup) are installed from PyPI with pip, constrained to the
    versions of its ``poetry.lock``; pip's own cache is used, so a second
    venv costs little. An interrupted install is resumed on the next call
    (the venv counts as ready only once everything is in). ``extra``: more
    requirements (its test tools, say), in a venv of their own, so the
    server the benchmarks measure stays the one published.
    """
    commit = checkout_commit(checkout)
    suffix = ("-" + hashlib.sha256("\n".join(extra).encode()).hexdigest()[:8]) if extra else ""
    venv = CACHE / f"venv-{commit[:12]}{suffix}"
    requirements = [
        *_main_dependencies((checkout / "pyproject.toml").read_text()),
        *EXTRA_REQUIREMENTS,
        *extra,
    ]
    constraints = _locked_versions((checkout / "poetry.lock").read_text())
    wanted = "\n".join([python, *requirements, "--", *constraints]) + "\n"
    marker = venv / READY_MARKER
    with contextlib.suppress(OSError):
        if marker.read_text() == wanted and _venv_python(venv).exists():
            return venv
    started = time.monotonic()

    def step(what: str) -> None:
        print(f"[sandbox-fusion venv +{time.monotonic() - started:5.1f}s] {what}", flush=True)

    if not _venv_python(venv).exists():
        step(f"creating {venv} with {python}")
        venv.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
    # Makes the venv a "conda root" for its python runner (see the module's docstring).
    (venv / "condabin").mkdir(exist_ok=True)
    constraints_file = venv / "sandbox-fusion-constraints.txt"
    constraints_file.write_text("\n".join(constraints) + "\n")
    step(f"pip install {' '.join(requirements)} (pinned to its poetry.lock; takes minutes)")
    subprocess.run(
        [
            str(_venv_python(venv)),
            "-m",
            "pip",
            "install",
            "--progress-bar",
            "off",
            "-c",
            str(constraints_file),
            *requirements,
        ],
        check=True,
        env=_clean_env(),
    )
    marker.write_text(wanted)
    step("ready")
    return venv


def _clean_env() -> dict[str, str]:
    """This process's environment without what would point SandboxFusion's
    interpreter at another one's packages."""
    drop = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PIP_REQUIRE_VIRTUALENV")
    return {k: v for k, v in os.environ.items() if k not in drop}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tail(log: Path, chars: int = 3000) -> str:
    try:
        return log.read_text(errors="replace")[-chars:] or "(nothing yet)"
    except OSError:
        return "(no log)"


def _wait_ping(url: str, proc: subprocess.Popen[bytes], log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"SandboxFusion at {url} exited with {proc.returncode} before answering "
                f"/v1/ping; its log ends:\n{_tail(log)}"
            )
        try:
            with urllib.request.urlopen(f"{url}/v1/ping", timeout=2) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    raise RuntimeError(
        f"SandboxFusion at {url} did not answer /v1/ping within {timeout_s:g} s; "
        f"its log ends:\n{_tail(log)}"
    )


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """The server and everything it started (compilers, submitted programs):
    TERM to the process group, KILL to what is left."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=15)
    # Also reaches children that outlived the server itself.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=15)


@contextlib.contextmanager
def sandbox_fusion_server(
    checkout: Path, venv: Path, port: int = 0, start_timeout_s: float = START_TIMEOUT_S
) -> Iterator[str]:
    """SandboxFusion's server (uvicorn, ``--loop asyncio``, isolation
    ``none``) on ``127.0.0.1:port`` (a free port if 0), its base URL once
    ``GET /v1/ping`` answers.

    It runs in a session of its own, and the whole process group is torn
    down on leaving, whatever happened: a submitted program or compiler it
    left behind must not load the next measurement.
    """
    port = port or _free_port()
    url = f"http://127.0.0.1:{port}"
    env = _clean_env()
    env["SANDBOX_CONFIG"] = "local"
    argv = [
        str(_venv_python(venv)),
        "-m",
        "uvicorn",
        "sandbox.server.server:app",
        "--loop",
        "asyncio",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    with tempfile.TemporaryDirectory(prefix="sandbox-fusion-") as tmp:
        log = Path(tmp) / "server.log"
        with log.open("wb") as sink:
            proc = subprocess.Popen(
                argv,
                cwd=checkout,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            _wait_ping(url, proc, log, start_timeout_s)
            yield url
        finally:
            _kill_group(proc)


def run_code(conn: http.client.HTTPConnection, body: dict[str, Any]) -> dict[str, Any]:
    """One ``POST /run_code`` on a kept-alive connection: its JSON answer."""
    conn.request(
        "POST",
        "/run_code",
        body=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json"},
    )
    response = conn.getresponse()
    raw = response.read()
    if response.status != 200:
        raise RuntimeError(f"/run_code answered {response.status}: {raw[:2000]!r}")
    answer: dict[str, Any] = json.loads(raw)
    return answer


#: The smoke's python request: stdin in, one line out.
PYTHON_BODY = {
    "language": "python",
    "code": "print(int(input())+1)\n",
    "stdin": "41\n",
    "compile_timeout": 10,
    "run_timeout": 10,
}

#: The smoke's cpp request (compiled by g++ on every request).
CPP_BODY = {
    "language": "cpp",
    "code": (
        "#include <bits/stdc++.h>\n"
        "int main() {\n"
        "    long long a, b;\n"
        "    std::cin >> a >> b;\n"
        "    std::cout << a + b << std::endl;\n"
        "    return 0;\n"
        "}\n"
    ),
    "stdin": "20 22\n",
    "compile_timeout": 10,
    "run_timeout": 10,
}


def _check(answer: dict[str, Any], expected: str) -> None:
    run = answer.get("run_result") or {}
    if answer.get("status") != "Success" or run.get("stdout") != expected:
        raise RuntimeError(f"unexpected answer (wanted stdout {expected!r}):\n{answer}")


def _load() -> str:
    """The machine's load averages: a busy machine (another CI run) stretches
    every compile, so the figures carry it."""
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--repo", type=Path, default=None, help=f"SandboxFusion's git repository (or ${REPO_ENV})"
    )
    ap.add_argument("--checkout", type=Path, default=DEFAULT_CHECKOUT)
    ap.add_argument("--python", default="python3.11")
    ap.add_argument("--cpp-requests", type=int, default=10)
    args = ap.parse_args(argv)

    checkout = sandbox_fusion_checkout(sandbox_fusion_repo(args.repo), args.checkout)
    print(f"checkout: {checkout} at {checkout_commit(checkout)}", flush=True)
    venv = ensure_sandbox_fusion_venv(checkout, args.python)
    print(f"venv: {venv}", flush=True)
    t0 = time.perf_counter()
    with sandbox_fusion_server(checkout, venv) as url:
        print(f"server: {url} (up in {time.perf_counter() - t0:.1f} s)", flush=True)
        host, port = url.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=120)
        try:
            for name, body, expected in (
                ("python", PYTHON_BODY, "42\n"),
                ("cpp (first: also probes its g++ flags)", CPP_BODY, "42\n"),
            ):
                t = time.perf_counter()
                answer = run_code(conn, body)
                took = time.perf_counter() - t
                print(f"\n{name}: {took * 1000:.0f} ms\n{json.dumps(answer, indent=2)}")
                _check(answer, expected)
            print(f"\n{args.cpp_requests} sequential cpp /run_code (load {_load()}):")
            times = []
            for i in range(args.cpp_requests):
                t = time.perf_counter()
                answer = run_code(conn, CPP_BODY)
                times.append(time.perf_counter() - t)
                _check(answer, "42\n")
                compiled = answer["compile_result"]["execution_time"]
                ran = answer["run_result"]["execution_time"]
                print(
                    f"  {i + 1:2d}: {times[-1] * 1000:5.0f} ms"
                    f" (its g++ {compiled * 1000:.0f} ms, its run {ran * 1000:.0f} ms)",
                    flush=True,
                )
        finally:
            conn.close()
    mean = sum(times) / len(times)
    print(f"mean {mean * 1000:.0f} ms, min {min(times) * 1000:.0f} ms (load {_load()})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
