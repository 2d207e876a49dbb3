"""Keep the versions and the pins between this repository's distributions in step.

Each distribution has one version source: its ``__about__.py`` (the meta
distribution ``collimate-rl``, which ships no code, follows core's). What
one distribution requires of another is written in its ``pyproject.toml``
as ``name>=X,<Y``: ``X`` the other's current version, ``Y`` its next minor
release. This script rewrites those pins (and the meta version) from the
``__about__`` files, or with ``--check`` only reports what is out of step
(exit 1), which CI runs.

    hatch run pins            # rewrite
    hatch run pins --check    # report, change nothing
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
META = ROOT / "packages" / "collimate-rl" / "pyproject.toml"

#: a pin of a distribution: name, optional extras, the bounds (ours are picked by name)
PIN = re.compile(r'"(?P<name>[a-z][a-z0-9-]*)(?P<extras>\[[a-z,-]+\])?>=[^,"]+,<[^"]+"')
VERSION = re.compile(r'^__version__ = "(?P<v>[^"]+)"', re.MULTILINE)
META_VERSION = re.compile(r'^version = "[^"]+"', re.MULTILINE)


def versions() -> dict[str, str]:
    """Distribution name -> version, from every ``__about__.py``."""
    found: dict[str, str] = {}
    for project in sorted(
        [*ROOT.glob("packages/*/pyproject.toml"), *ROOT.glob("plugins/*/pyproject.toml")]
    ):
        name = re.search(r'^name = "([^"]+)"', project.read_text(), re.MULTILINE)
        abouts = list(project.parent.glob("src/**/__about__.py"))
        if name and len(abouts) == 1:
            match = VERSION.search(abouts[0].read_text())
            if match:
                found[name.group(1)] = match.group("v")
    found["collimate-rl"] = found["collimate-rl-core"]
    return found


def upper_bound(version: str) -> str:
    major, minor = (int(p) for p in re.findall(r"\d+", version)[:2])
    return f"{major}.{minor + 1}" if major == 0 else f"{major + 1}"


def in_step(text: str, known: dict[str, str], path: Path) -> str:
    def pin(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in known:
            return match.group(0)
        version = known[name]
        return f'"{name}{match.group("extras") or ""}>={version},<{upper_bound(version)}"'

    text = PIN.sub(pin, text)
    if path == META:
        text = META_VERSION.sub(f'version = "{known["collimate-rl"]}"', text, count=1)
    return text


def projects() -> list[Path]:
    return sorted(
        [
            *ROOT.glob("packages/*/pyproject.toml"),
            *ROOT.glob("plugins/*/pyproject.toml"),
            *ROOT.glob("integration-tests/*/pyproject.toml"),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report, change nothing")
    args = parser.parse_args(argv)
    known = versions()
    drifted = []
    for path in projects():
        text = path.read_text()
        wanted = in_step(text, known, path)
        if wanted != text:
            drifted.append(path.relative_to(ROOT))
            if not args.check:
                path.write_text(wanted)
    for name, version in sorted(known.items()):
        print(f"{name:<28} {version}")
    if drifted:
        verb = "out of step" if args.check else "updated"
        print(f"{verb}: " + ", ".join(str(p) for p in drifted))
        return 1 if args.check else 0
    print("every pin is in step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
