"""Environments: declare how wide the next session is, release it after.

An environment is what you run in (a catalog image, or a template you
baked); you only declare its width, the platform keeps the pool.
``client.env(ref, width=N)``:

* a catalog ref (an image id or name from ``client.images()``) is baked into
  your own template with the pool width ``N`` declared up front; the call
  returns once the bake is ``Live`` (a ``Failed`` bake raises
  :class:`~collimate_rl.TemplateBakeFailed`);
* a template you own gets ``N`` declared on it (``expect``);
* ``width=None`` declares nothing: a plain handle, nothing to release.

Leaving the ``with`` block releases the declaration (``release``), also when
the block raised, so warm capacity stops being held at once. A failed
release is logged, not raised: an idle environment decays to its baseline
anyway, and the block's own error must stay the one you see.
"""

from __future__ import annotations

from typing import Any

from ..gateway import register_flows
from ._async.envs import AsyncEnv
from ._env_state import DEFAULT_READY_TIMEOUT as DEFAULT_READY_TIMEOUT
from ._sync.envs import Env

__all__ = ["AsyncEnv", "Env", "open_env"]

# Their public home: reprs, docs and pickles name this module. (AsyncEnv is
# written in collimate_rl/gateway_flows/_async/envs.py; Env is generated from it by
# tools/unasync.py.)
for _cls in (Env, AsyncEnv):
    _cls.__module__ = __name__
del _cls


def open_env(client: Any, ref: str, **kwargs: Any) -> Env | AsyncEnv:
    """``client.env(...)`` for either client flavour."""
    from ..gateway import AsyncGatewayClient

    if isinstance(client, AsyncGatewayClient):
        return AsyncEnv(client, ref, **kwargs)
    return Env(client, ref, **kwargs)


# ``client.env(...)`` builds these (the client is a layer below: see collimate_rl.gateway)
register_flows(Env=Env, AsyncEnv=AsyncEnv)
