"""``python -m collimate_rl`` runs the ``collimate`` command."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())
