"""``collimate doctor``: what this host gives the local backend, and the
command that adds what is missing.

Grading untrusted code well depends on the host: namespaces isolation needs
bubblewrap, per-clone quotas a delegated cgroup, packs that keep
candidates apart Landlock ABI 6 (Linux 6.12), each language its toolchain,
the multi-language datasets' tests their libraries. Each of these degrades
to something weaker that still runs, and says so where it happens (the
``collimate serve`` banner, a pack graded alone); ``doctor`` says it all at
once, before a training run finds out.

The isolation and quotas are what a real backend chooses: one is started
here (a second or two), asked, and stopped.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final

from .browser_template import INSTALL_HINT, find_chromium
from .go_cache import GO_LIBRARIES, TESTIFY
from .program_harness import JAVATUPLES_JAR
from .toolchains import node_module_roots

__all__ = ["Finding", "findings", "main"]

#: Landlock's ABI from which packs keep their candidates apart.
LANDLOCK_MIN_ABI: Final = 6
#: How long the languages may stay ``probing`` in the backend's health.
_PROBE_WAIT_S: Final = 120.0


@dataclass(frozen=True)
class Finding:
    """One thing the host gives or lacks."""

    name: str
    ok: bool
    detail: str
    #: the command that adds it, when it is missing
    fix: str | None = None


def _landlock_abi() -> int | None:
    """Landlock's ABI version (``landlock_create_ruleset`` with its VERSION
    flag), or None when the kernel has none."""
    if platform.machine() not in ("x86_64", "aarch64"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    abi = libc.syscall(444, None, 0, 1)
    return abi if abi > 0 else None


def _bubblewrap() -> Finding:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return Finding(
            "bubblewrap", False, "not installed: clones run with process isolation only",
            "apt-get install bubblewrap",
        )  # fmt: skip
    try:
        version = subprocess.run(
            [bwrap, "--version"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        version = "version unknown"
    return Finding("bubblewrap", True, f"{bwrap} ({version})")


def _landlock() -> Finding:
    abi = _landlock_abi()
    if abi is not None and abi >= LANDLOCK_MIN_ABI:
        return Finding("landlock", True, f"ABI {abi}: packed candidates are kept apart")
    seen = "none" if abi is None else f"ABI {abi}"
    return Finding(
        "landlock",
        False,
        f"{seen}: packs need ABI {LANDLOCK_MIN_ABI}, so their candidates are graded alone",
        "a Linux 6.12 or later kernel",
    )


def _seccomp() -> Finding:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            found = any(line.startswith("Seccomp:") for line in fh)
    except OSError:
        found = False
    return Finding("seccomp", found, "available" if found else "not in this kernel")


def _backend() -> tuple[dict[str, Any] | None, str]:
    """A real backend's health (isolation, quotas, languages), or None and why."""
    from .embedded import LocalCollimateBackend

    try:
        with LocalCollimateBackend() as backend:
            import httpx

            # the languages are ``probing`` until the toolchains were looked
            # for (a thread, seconds on a first start): asked again until then
            deadline = time.monotonic() + _PROBE_WAIT_S
            while True:
                health = httpx.get(f"{backend.base_url}/v1/health", timeout=120).json()
                languages = health.get("languages")
                probing = isinstance(languages, dict) and languages.get("probing")
                if not probing or time.monotonic() > deadline:
                    return health, ""
                time.sleep(0.2)
    except Exception as exc:  # what the user needs is why, whatever it is
        return None, f"{type(exc).__name__}: {exc}"


def _from_health(health: dict[str, Any]) -> list[Finding]:
    out = []
    level = str(health.get("isolation"))
    out.append(
        Finding(
            "isolation",
            level == "namespaces",
            f"{level} ({health.get('isolation_detail')})",
            None if level == "namespaces" else "apt-get install bubblewrap (and user namespaces)",
        )
    )
    quotas = health.get("quotas")
    if isinstance(quotas, dict):
        if quotas.get("mechanism") == "rlimits":
            why = quotas.get("why_not_cgroups", "")
            out.append(Finding("quotas", False, f"rlimits only, per process ({why})",
                               "a cgroup v2 subtree delegated to this user"))  # fmt: skip
        else:
            out.append(Finding("quotas", True, f"{quotas.get('mechanism')} per clone"))
    languages = health.get("languages")
    if isinstance(languages, dict):
        for name, info in sorted(languages.items()):
            if not isinstance(info, dict):
                continue
            if info.get("available"):
                out.append(Finding(f"language {name}", True, str(info.get("compiler"))))
            else:
                out.append(Finding(f"language {name}", False, "missing", str(info.get("install"))))
    return out


def _perl_module(name: str) -> bool:
    """Whether a Perl module is installed where Debian's perl finds it
    (its vendor and site directories; no perl started)."""
    roots = ["/usr/share/perl5", "/usr/local/share/perl5", *glob.glob("/usr/local/share/perl/*")]
    return any(os.path.isfile(os.path.join(root, name)) for root in roots)


def _libraries() -> list[Finding]:
    """The libraries the multi-language datasets' tests use."""
    node = node_module_roots(with_npm=False)

    def npm(package: str) -> bool:
        return any(os.path.isdir(os.path.join(root, package)) for root in node)

    checks = [
        ("javatuples (MultiPL-E's Java)", os.path.isfile(JAVATUPLES_JAR),
         "apt-get install libjavatuples-java"),
        ("testify (HumanEval-X's Go)", os.path.isdir(os.path.join(GO_LIBRARIES, "src", TESTIFY)),
         "apt-get install golang-github-stretchr-testify-dev"),
        ("lodash (MBXP's JavaScript)", npm("lodash"), "npm install -g lodash@4"),
        ("js-md5 (HumanEval-X's JavaScript/162)", npm("js-md5"), "npm install -g js-md5@0.8"),
        ("boost (HumanEval-X's CPP/22, CPP/137)",
         os.path.isfile("/usr/include/boost/any.hpp"), "apt-get install libboost-dev"),
        ("Test::Deep (MultiPL-E's Perl)", _perl_module("Test/Deep.pm"),
         "apt-get install libtest-deep-perl"),
        ("Data::Compare (MBXP's Perl)", _perl_module("Data/Compare.pm"),
         "apt-get install libdata-compare-perl"),
        # (MultiPL-E's Racket checks are the harness's own; /run_code's are rackunit's)
        ("rackunit (Racket programs /run_code runs)",
         os.path.isfile("/usr/share/racket/pkgs/rackunit-lib/rackunit/main.rkt"),
         "apt-get install racket"),
    ]  # fmt: skip
    return [
        Finding(name, found, "installed" if found else "missing", None if found else fix)
        for name, found, fix in checks
    ]


def _extras() -> list[Finding]:
    chromium = find_chromium()
    playwright = importlib.util.find_spec("playwright") is not None
    ray = importlib.util.find_spec("ray") is not None
    return [
        Finding(
            "chromium",
            chromium is not None,
            f"{chromium} (the browser template)"
            if chromium
            else "missing: the browser template (connect_browser) is unavailable",
            None if chromium else INSTALL_HINT,
        ),
        Finding(
            "playwright",
            playwright,
            "importable" if playwright else "not installed (connect_browser's client)",
            None if playwright else "pip install 'collimate-rl-core[browser]'",
        ),
        Finding(
            "ray",
            ray,
            "importable" if ray else "not installed (grading on a Ray cluster)",
            None if ray else "pip install ray",
        ),
    ]


def findings(*, start_backend: bool = True) -> list[Finding]:
    """Everything ``doctor`` reports, in the order it prints it."""
    out = [
        Finding("python", True, f"{platform.python_version()} ({sys.executable})"),
        Finding("kernel", True, f"{platform.system()} {platform.release()} {platform.machine()}"),
        _bubblewrap(),
    ]
    if start_backend:
        health, why = _backend()
        if health is None:
            out.append(Finding("local backend", False, f"did not start: {why}"))
        else:
            out += _from_health(health)
    out += [_landlock(), _seccomp(), *_libraries(), *_extras()]
    return out


def render(found: Sequence[Finding]) -> str:
    width = max(len(f.name) for f in found)
    lines = ["collimate doctor: what this host gives collimate-rl"]
    for f in found:
        mark = "ok  " if f.ok else "--  "
        detail = f.detail if len(f.detail) <= 100 else f.detail[:99] + "…"  # --json: all of it
        lines.append(f"  {mark}{f.name.ljust(width)}  {detail}")
        if f.fix:
            lines.append(f"      {' ' * width}  fix: {f.fix}")
    missing = sum(1 for f in found if not f.ok)
    lines.append(f"{len(found) - missing} ok, {missing} missing or limited")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="collimate doctor", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument(
        "--no-backend", action="store_true",
        help="do not start a backend (no isolation, quotas or languages in the report)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    found = findings(start_backend=not args.no_backend)
    if args.json:
        print(json.dumps([asdict(f) for f in found], indent=1))
    else:
        print(render(found))
    return 0
