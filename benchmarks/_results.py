"""What a benchmark leaves behind besides its printout: a results JSON file
and the charts drawn from it, side by side.

``benchmarks/results/<script>.json`` (``--out DIR`` elsewhere) holds the
run (when, on which commit, the options, the machine's CPU count and load)
and the figures the script measured, and a ``"charts"`` list describing
each chart (see :mod:`collimate_rl.reports.chart_spec`). Each chart is
written beside it as ``<script>-<name>.svg``, and can be drawn again from
the JSON alone: ``python -m collimate_rl.reports benchmarks/results/X.json``.

``benchmarks/results/`` keeps the newest run of each benchmark, committed:
``readme_tables.py`` writes the README's tables from it. The charts drawn
there are not kept (the repository's ``.gitignore``); the charts the repository
keeps are in ``benchmarks/figures/``, beside their runs (``--out
benchmarks/figures``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

from collimate_rl.reports import write_charts

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results"


def add_out_option(parser: argparse.ArgumentParser) -> None:
    """``--out DIR``: where the results JSON and its charts go."""
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"directory for the results JSON and its SVG charts (default: {DEFAULT_OUT})",
    )


def _commit() -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(HERE), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


#: The load average when the benchmark started (this module is imported then).
LOAD_AT_START = os.getloadavg()


def _shown(value: object) -> object:
    """A path as the repository names it (no home or worktree in the file)."""
    if not isinstance(value, Path):
        return value
    try:
        return value.resolve().relative_to(HERE.parent).as_posix()
    except ValueError:
        return str(value)


def _options(args: argparse.Namespace) -> dict[str, Any]:
    return {k: _shown(v) for k, v in vars(args).items()}


def write_results(
    script: str,
    args: argparse.Namespace,
    figures: dict[str, Any],
    charts: list[dict[str, Any]],
) -> Path:
    """Write ``<out>/<script stem>.json`` and its charts; print where."""
    name = Path(script).stem
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    payload = {
        "benchmark": name,
        "run": {
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "commit": _commit(),
            "argv": sys.argv[1:],
            "options": _options(args),
            "cpus": os.cpu_count(),
            "load_average_at_start": [round(x, 2) for x in LOAD_AT_START],
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
            "python": platform.python_version(),
        },
        "figures": figures,
        "charts": charts,
    }
    path = out / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2) + "\n")
    written = write_charts(path, payload)
    print(f"results: {path}" + "".join(f"\n  chart: {p}" for p in written))
    return path
