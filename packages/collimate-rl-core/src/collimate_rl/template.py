"""The bake and session flow under the import path the earlier release used
(``from collimate_rl.template import Ready, Template``); the code lives in
:mod:`collimate_rl.gateway_flows`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from . import gateway_flows
from .errors import DemoTierLimit, TemplateBakeFailed
from .gateway_flows import *  # noqa: F403 (the flows, under this module's old path)
from .gateway_flows import Session
from .wire import DEFAULT_EXEC_TIMEOUT_S

__all__ = ["DemoTierLimit", "TemplateBakeFailed", "open_session"]
__all__ += gateway_flows.__all__


def open_session(
    client: Any,
    template: Any,
    *,
    label: str | None = None,
    egress: Mapping[str, Any] | None = None,
    default_timeout: int = DEFAULT_EXEC_TIMEOUT_S,
    secret_refs: Sequence[str] | None = None,
    **kwargs: Any,
) -> Session:
    """A :class:`Session` on ``template`` (an id or a handle), not open yet:
    ``client.session(template)`` spelled as a function, to use as a context
    manager (``with open_session(client, handle) as sess: ...``).

    ``secret_refs`` (tenant secrets injected at create time, in the 0.8.0
    release) are not supported by this gateway client: naming any raises
    :class:`NotImplementedError` rather than open a sandbox without them.
    Other keywords (``labels``) go to :class:`Session`.
    """
    if secret_refs:
        raise NotImplementedError(
            "open_session(secret_refs=...): runtime-injected tenant secrets are not "
            "supported by this release's gateway client; pass values through the "
            "template's env or the session's exec instead"
        )
    return Session(
        client, template, label=label, egress=egress, default_timeout=default_timeout, **kwargs
    )
