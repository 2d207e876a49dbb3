"""collimate-rl: Collimate microVMs as the sandboxed reward grader for RL.

``collimate_rl`` is shared by several distributions: core ships this file and
the plugins ship only their subpackage (``collimate_rl.skyrl``, ...), so the
path is extended to find them wherever they were installed, editable or not.

Every public name is importable from here directly, as in the earlier
single-package release.
"""

from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)

# ruff: noqa: E402, I001
from .__about__ import __version__
from .errors import (
    CollimateDrainingError,
    CollimateError,
    CollimateTaskError,
    DemoTierLimit,
    GatewayError,
    TemplateBakeFailed,
)

# --- transports (client.py, gateway.py, transport.py) ---
from .client import AsyncCollimateClient, CollimateClient
from .gateway import AsyncGatewayClient, GatewayClient
from .transport import SessionClient, connect, connect_async
# --- end transports ---

# --- plugins ---
from .plugins import get_plugin_manager, hookimpl, hookspec
# --- end plugins ---

# --- grading and sandbox (seeds.py, rewards.py, sandbox.py, manifest) ---
# --- end grading ---

__all__ = [
    "__version__",
    "CollimateError",
    "CollimateDrainingError",
    "CollimateTaskError",
    "GatewayError",
    "DemoTierLimit",
    "TemplateBakeFailed",
    # --- transports ---
    "CollimateClient",
    "AsyncCollimateClient",
    "GatewayClient",
    "AsyncGatewayClient",
    "SessionClient",
    "connect",
    "connect_async",
    # --- plugins ---
    "get_plugin_manager",
    "hookimpl",
    "hookspec",
    # --- grading ---
]
