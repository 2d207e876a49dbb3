"""collimate-rl for slime: Collimate-graded custom reward hooks.

slime loads custom reward functions by dotted path
(``--custom-rm-path collimate_rl.slime.reward_func``). This distribution
ships only the ``collimate_rl.slime`` subpackage and never imports slime.
"""

from __future__ import annotations

from .__about__ import __version__

__all__ = ["__version__"]
