"""``python -m collimate_rl.local_backend --port 8080`` (the seed README's command)."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m collimate_rl.local_backend"))
