"""The pluggy markers of the ``collimate_rl`` project.

Kept apart from the specs so a plugin can import ``hookimpl`` without pulling
in anything else of core.
"""

from __future__ import annotations

import pluggy

PROJECT_NAME = "collimate_rl"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
