"""What the blocking and async gateway clients share: the key check, the
flows registered from the layer above (:func:`register_flows`), and the
configuration of both (``GatewayClientBase``). The routes are
``gateway_calls.py``; ``AsyncGatewayClient`` is written in
``collimate_rl/gateway/_async.py`` and ``GatewayClient`` generated from it;
the public module is ``collimate_rl.gateway``.
"""

from __future__ import annotations

import logging
import os
import random
import re
from collections.abc import Callable
from typing import Any, TypeVar

from ..__about__ import __version__
from ..retry import RetryPolicy
from .pool import HttpSettings

__all__ = [
    "DEFAULT_GATEWAY_URL",
    "GatewayClientBase",
    "flow",
    "log",
    "register_flows",
    "resolve_key",
]

log = logging.getLogger("collimate_rl.gateway")

DEFAULT_GATEWAY_URL = "https://api.collimate.ai"
_KEY_RE = re.compile(r"^col_(demo|pro|ent)_\S+$")
_USER_AGENT = f"collimate-rl/{__version__}"

_G = TypeVar("_G", bound="GatewayClientBase")


def resolve_key(api_key: str | None) -> str:
    key = api_key if api_key is not None else os.environ.get("COLLIMATE_API_KEY")
    if not key:
        raise ValueError(
            "the gateway needs an API key: pass api_key='col_<tier>_...' or set "
            "COLLIMATE_API_KEY (for a node-local daemon use CollimateClient instead)"
        )
    key = key.strip()
    if not _KEY_RE.match(key):
        shown = key[:8] + "..." if len(key) > 8 else key
        raise ValueError(
            f"not a Collimate API key ({shown!r}): keys look like col_<tier>_<secret> "
            "with tier demo, pro or ent"
        )
    return key


# --- the flows, registered from the layer above ------------------------------

#: The classes :meth:`GatewayClient.env` / :meth:`GatewayClient.session` (and
#: their async twins) build, by name: ``Env``, ``AsyncEnv``, ``Session``,
#: ``AsyncSession``. The flows (:mod:`collimate_rl.gateway_flows`) are a layer
#: above these clients and build on them, so they register their classes here
#: when they are imported (:func:`register_flows`) rather than being imported
#: from here; ``import collimate_rl``, which importing this module implies,
#: imports them before any client exists.
_FLOWS: dict[str, Callable[..., Any]] = {}


def register_flows(**classes: Callable[..., Any]) -> None:
    """Called by :mod:`collimate_rl.gateway_flows` with its classes, by name."""
    _FLOWS.update(classes)


def flow(name: str) -> Callable[..., Any]:
    try:
        return _FLOWS[name]
    except KeyError:
        raise RuntimeError(
            f"collimate_rl.gateway_flows has not registered {name}: import collimate_rl"
        ) from None


# --- shared configuration ---------------------------------------------------


class GatewayClientBase:
    def _configure(
        self,
        api_key: str | None,
        base_url: str | None,
        timeout: float,
        retries: int,
        backoff: float,
        retry_budget: float,
        rng: random.Random | None,
        httpx_transport: Any,
    ) -> None:
        """Settle what the clients' constructors were given (their signature,
        with its defaults, is the public one: this takes every value as is)."""
        self._api_key = resolve_key(api_key)
        origin = base_url or os.environ.get("COLLIMATE_BASE_URL") or DEFAULT_GATEWAY_URL
        self.base_url = origin.rstrip("/")
        self.timeout = float(timeout)
        self.retries = retries
        self.backoff = backoff
        self.retry_budget = retry_budget
        self._settings = HttpSettings(
            base_url=self.base_url,
            timeout=self.timeout,
            headers={"User-Agent": _USER_AGENT},
            auth_headers={"Authorization": f"Bearer {self._api_key}"},
            httpx_transport=httpx_transport,
            trust_env=True,  # the gateway is remote: honour HTTPS_PROXY and friends
        )
        self._policy = RetryPolicy(
            retries=retries, backoff=backoff, retry_budget=retry_budget, rng=rng or random.Random()
        )

    @property
    def tier(self) -> str:
        """``demo``, ``pro`` or ``ent``: the plan the key belongs to."""
        return self._api_key.split("_", 2)[1]

    @property
    def api_key(self) -> str:
        return self._api_key

    @property
    def endpoint(self) -> str:
        return self._settings.endpoint

    def __repr__(self) -> str:  # never shows the key
        return f"{type(self).__name__}({self.base_url!r}, tier={self.tier!r})"

    @classmethod
    def from_env(cls: type[_G], **kwargs: Any) -> _G:
        """A client from ``$COLLIMATE_API_KEY`` and ``$COLLIMATE_BASE_URL``."""
        return cls(**kwargs)
