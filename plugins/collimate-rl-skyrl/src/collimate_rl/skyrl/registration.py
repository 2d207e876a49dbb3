"""Registering ``collimate_code`` with skyrl-gym.

skyrl-gym keeps a global registry and has no plugin discovery, and SkyRL
builds envs in fresh Ray worker processes. So this distribution registers
the env itself, in every process that imports ``skyrl_gym``, with no user
import: a ``.pth`` file it installs runs :mod:`_collimate_rl_skyrl_autoregister`
at interpreter start, which only puts a tiny import hook on ``sys.meta_path``
(nothing is imported); when ``skyrl_gym`` is first imported, the hook calls
:func:`register_into` on it. ``COLLIMATE_RL_SKYRL_AUTOREGISTER=0`` turns that
off; :func:`register` does the same by hand.

The entry point is a string, so registering imports neither this package
nor core: they load at the first ``skyrl_gym.make("collimate_code")``.
Registering twice is harmless (the second call finds the first).
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["AUTOREGISTER_ENV", "ENTRY_POINT", "ENV_ID", "register", "register_into"]

#: The id datasets name as ``env_class``.
ENV_ID: Final = "collimate_code"
#: Where skyrl-gym finds the env class when it makes one.
ENTRY_POINT: Final = "collimate_rl.skyrl.env:CollimateCodeEnv"
#: Set to ``0`` (or ``false``, ``no``, ``off``) to leave skyrl-gym's registry alone.
AUTOREGISTER_ENV: Final = "COLLIMATE_RL_SKYRL_AUTOREGISTER"


def register_into(skyrl_gym: Any, env_id: str = ENV_ID) -> bool:
    """Register the env in the given ``skyrl_gym`` module; False if ``env_id``
    was registered already (by us: nothing to do; by someone else: theirs stays)."""
    if env_id in skyrl_gym.envs.registration.registry:
        return False
    skyrl_gym.register(id=env_id, entry_point=ENTRY_POINT)
    return True


def register(env_id: str = ENV_ID) -> bool:
    """Register ``CollimateCodeEnv`` as ``env_id`` (imports ``skyrl_gym``)."""
    import skyrl_gym

    return register_into(skyrl_gym, env_id)
