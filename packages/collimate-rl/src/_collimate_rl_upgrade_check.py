"""Says how to repair an install that an in-place upgrade from the old
single-package ``collimate-rl`` (0.5.0 to 0.8.0) left without core's files.

Why it exists: those releases shipped ``collimate_rl/__init__.py``,
``collimate_rl/errors.py``, ..., ``collimate_rl/skyrl/__init__.py``, ... and
the ``collimate`` script, all listed in their RECORD. ``pip install -U
"collimate-rl[trl]"`` over one of them installs dependencies first: it writes
``collimate-rl-core`` (and the plugins), then uninstalls the old
``collimate-rl``, deleting every path of its RECORD, some of which core and
the plugins had just written, and then installs this meta distribution.
What is left imports ``collimate_rl`` as an empty namespace package and has
no ``collimate`` command. A wheel runs no code at install time and pip
installs a dependency before its dependents, so no wheel can prevent it.
(uv uninstalls first and is not affected.)

This meta distribution is installed after that uninstall, so its files
survive it. At interpreter start, ``collimate_rl_upgrade_check.pth`` runs one
line that stats ``collimate_rl/__init__.py`` in its own site-packages (and,
only when that is absent, ``collimate_rl/cli.py``, a file the old releases
never had): about 30 microseconds, nearly all of it compiling the line, as
much as setuptools' own ``distutils-precedence.pth`` costs. Only when
``__init__.py`` is gone while ``cli.py`` is still there does it import this
module, which reads the RECORD of each of this repository's distributions
installed there, names those whose files are missing, and prints to stderr
the one command that puts them back. An editable install (the hatch
workspace) keeps ``collimate_rl`` outside site-packages: the line finds no
``cli.py`` there and stays silent.
"""

# Imported at interpreter start, and only when something is broken: only
# modules the interpreter has already loaded by then (no typing, no
# __future__), and it never raises.
import os
import sys

#: the dist-info prefixes of this repository's distributions (normalised names)
OURS = ("collimate_rl_", "openenv_collimate_code-")
#: RECORD entries not worth reporting when missing
SKIP = ("__pycache__/", ".dist-info/")
SHOWN = 8  # missing files named per distribution
#: the site directories reported in this process: CPython runs a venv's .pth
#: files twice at start (site.venv() and site.main() both add the directory)
REPORTED: "set[str]" = set()


def missing_files(site: str) -> "list[tuple[str, str, list[str]]]":
    """(distribution, version, missing files) for each of ours installed in
    ``site`` whose RECORD lists files that are gone."""
    found = []
    for entry in sorted(os.listdir(site)):
        if not (entry.endswith(".dist-info") and entry.startswith(OURS)):
            continue
        name, _, version = entry[: -len(".dist-info")].partition("-")
        try:
            with open(os.path.join(site, entry, "RECORD"), encoding="utf-8") as record:
                paths = [line.split(",", 1)[0] for line in record if line.strip()]
        except OSError:
            continue
        gone = [
            path
            for path in paths
            if not any(skip in path for skip in SKIP)
            and not os.path.exists(os.path.join(site, path))
        ]
        if gone:
            found.append((name.replace("_", "-"), version, gone))
    return found


def shown(path: str) -> str:
    """A RECORD path as a user reads it (``../../../bin/collimate`` -> ``bin/collimate``)."""
    while path.startswith("../"):
        path = path[3:]
    return path


def repair_command(broken: "list[tuple[str, str, list[str]]]", python: str) -> str:
    pins = " ".join(f"{name}=={version}" for name, version, _ in broken)
    return f"{python} -m pip install --force-reinstall --no-deps {pins}"


def message(site: str, broken: "list[tuple[str, str, list[str]]]", python: str) -> str:
    lines = [
        "collimate-rl: this environment is missing files of "
        + ", ".join(f"{name} {version}" for name, version, _ in broken)
        + f" (in {site}):"
    ]
    for name, _, gone in broken:
        names = [shown(path) for path in gone]
        more = f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
        lines.append(f"  {name}: " + ", ".join(names[:SHOWN]) + more)
    lines += [
        "An in-place upgrade from the single-package collimate-rl 0.5-0.8 does this: pip",
        "installs the new distributions first, then deletes the old release's files, some",
        "of which they had just written. Repair with (add the --find-links or --index-url",
        "you installed with):",
        "    " + repair_command(broken, python),
    ]
    return "\n".join(lines) + "\n"


def report(site: str) -> None:
    """Print the repair command to stderr when files of ours are missing from
    ``site``, once per process; never raise."""
    if site in REPORTED:
        return
    REPORTED.add(site)
    try:
        broken = missing_files(site)
        if broken:
            sys.stderr.write(message(site, broken, sys.executable or "python"))
    except Exception as exc:  # a check must never stop the interpreter
        sys.stderr.write(
            f"collimate-rl: files of collimate-rl-core are missing from {site} ({exc!r}); "
            "repair with: python -m pip install --force-reinstall --no-deps collimate-rl-core\n"
        )
