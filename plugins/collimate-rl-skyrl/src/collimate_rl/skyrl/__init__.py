"""collimate-rl for SkyRL: grade SkyRL rollouts in Collimate sandboxes.

This distribution ships only the ``collimate_rl.skyrl`` subpackage and plugs
into core through the ``collimate_rl`` entry point (see :mod:`.plugin`).
Importing it does not import ``skyrl_gym``.
"""

from __future__ import annotations

from .__about__ import __version__

__all__ = ["__version__"]
