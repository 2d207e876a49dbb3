"""collimate-rl for OpenEnv: Collimate sessions as an OpenEnv container provider.

``CollimateProvider`` (OpenEnv's ``ContainerProvider``) starts environment
servers as sessions of app templates; ``image_to_template`` says which
template an image names. This distribution ships only the
``collimate_rl.openenv`` subpackage and plugs into core through the
``collimate_rl`` entry point (see :mod:`.plugin`). Importing it does not
import OpenEnv (which takes seconds): the provider loads it on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .__about__ import __version__
from .images import image_to_template

if TYPE_CHECKING:
    from .provider import CollimateProvider

__all__ = ["CollimateProvider", "__version__", "image_to_template"]


def __getattr__(name: str) -> Any:
    if name == "CollimateProvider":
        from .provider import CollimateProvider

        return CollimateProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
