"""collimate-rl for OpenEnv: Collimate sandboxes as an OpenEnv container provider.

This distribution ships only the ``collimate_rl.openenv`` subpackage and plugs
into core through the ``collimate_rl`` entry point (see :mod:`.plugin`).
Importing it does not import OpenEnv (which takes seconds to import).
"""

from __future__ import annotations

from .__about__ import __version__

__all__ = ["__version__"]
