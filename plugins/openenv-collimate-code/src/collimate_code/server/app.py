"""The ASGI app: OpenEnv's own ``create_app``, concurrent sessions on.

``MAX_SESSIONS_ENV`` (default 64) bounds the WebSocket sessions one server
holds at once.
"""

from __future__ import annotations

import os

from openenv.core.env_server.http_server import create_app

from ..models import CollimateCodeAction, CollimateCodeObservation
from .environment import CollimateCodeEnvironment

__all__ = ["MAX_SESSIONS_ENV", "app"]

MAX_SESSIONS_ENV = "COLLIMATE_CODE_MAX_SESSIONS"

app = create_app(
    CollimateCodeEnvironment,
    CollimateCodeAction,
    CollimateCodeObservation,
    env_name="collimate_code",
    max_concurrent_envs=int(os.environ.get(MAX_SESSIONS_ENV) or 64),
)
