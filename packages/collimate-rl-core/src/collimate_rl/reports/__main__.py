"""``python -m collimate_rl.reports RESULTS.json...``: draw each results
file's charts again, as SVG files beside it (see :mod:`.chart_spec`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .chart_spec import ChartSpecError, write_charts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m collimate_rl.reports",
        description="Draw the charts a results JSON file describes, as SVG beside it.",
    )
    parser.add_argument("results", nargs="+", type=Path, help="results JSON files")
    args = parser.parse_args(argv)
    failed = 0
    for path in args.results:
        try:
            written = write_charts(path, json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:  # ChartSpecError and JSON errors are ValueErrors
            kind = "bad chart" if isinstance(exc, ChartSpecError) else "cannot read"
            print(f"{path}: {kind}: {exc}", file=sys.stderr)
            failed += 1
            continue
        for target in written:
            print(target)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
