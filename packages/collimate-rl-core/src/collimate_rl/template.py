"""The bake and session flow under the import path the earlier release used
(``from collimate_rl.template import Ready, Template``); the code lives in
:mod:`collimate_rl.gateway_flows`."""

from __future__ import annotations

from typing import Any

from .errors import DemoTierLimit, TemplateBakeFailed
from .gateway_flows import (
    AsyncEnv,
    AsyncForkGroup,
    AsyncSession,
    AsyncTemplate,
    AsyncTemplateHandle,
    Env,
    ForkGroup,
    Ready,
    Session,
    Template,
    TemplateHandle,
    TemplateStatus,
)

__all__ = [
    "AsyncEnv",
    "AsyncForkGroup",
    "AsyncSession",
    "AsyncTemplate",
    "AsyncTemplateHandle",
    "DemoTierLimit",
    "Env",
    "ForkGroup",
    "Ready",
    "Session",
    "Template",
    "TemplateBakeFailed",
    "TemplateHandle",
    "TemplateStatus",
    "open_session",
]


def open_session(client: Any, template: Any, **kwargs: Any) -> Session:
    """A :class:`Session` on ``template`` (an id or a handle), not yet open:
    ``client.session(template)`` spelled as a function."""
    return Session(client, template, **kwargs)
