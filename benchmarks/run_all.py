"""Run every ``benchmarks/bench_*.py`` in turn (``hatch run bench:all``).

Each benchmark is its own process (a clean interpreter, no state shared
between benchmarks). Extra arguments are passed to every script. The exit
code is non-zero when any benchmark failed, and the failures are listed.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    here = Path(__file__).resolve().parent
    scripts = sorted(here.glob("bench_*.py"))
    if not scripts:
        print(f"no benchmarks/bench_*.py found in {here}")
        return 0
    failed: list[str] = []
    for script in scripts:
        print(f"=== {script.name} ===", flush=True)
        started = time.perf_counter()
        code = subprocess.call([sys.executable, str(script), *argv])
        took = time.perf_counter() - started
        print(f"=== {script.name}: exit {code} in {took:.1f} s ===", flush=True)
        if code != 0:
            failed.append(f"{script.name} (exit {code})")
    print(f"{len(scripts) - len(failed)} of {len(scripts)} benchmarks succeeded")
    if failed:
        print("failed: " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
