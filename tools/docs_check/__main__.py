"""``python tools/docs_check [--routes]`` (or ``python -m docs_check`` from
``tools/``): both checks on this repository; exit 1 on any finding."""

import sys
from pathlib import Path

if not __package__:  # run as a folder: the package is imported from tools/
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from docs_check import main

raise SystemExit(main(sys.argv[1:]))
