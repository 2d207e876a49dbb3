"""Per-session environment variables for the server of an app template.

An app template's server is started when its clone is made. A session that
gets a clone of its own (``warm_pool = 0``) can hand that server environment
variables (``POST /v1/sessions {"env": {...}}``): an OpenEnv container's
``env_vars``, say. A clone taken from a warm pool had its server running
before the session existed, so nothing the session sends can reach it; that
is refused, as is ``env`` for a template that runs no server. Refusing is the
point: variables that were asked for and silently not set would make the
server run with some other configuration than the caller believes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .engine.api import TemplateSpec
from .wire_errors import WireError, bad_request

__all__ = ["MAX_ENV_BYTES", "parse_session_env"]

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: The most bytes of names and values one session may send (argv+env limits
#: of the kernel are far above this; a configuration does not need more).
MAX_ENV_BYTES = 64 * 1024


def parse_session_env(raw: Any, spec: TemplateSpec) -> dict[str, str] | None:
    """The ``env`` of a session request, checked against its template.

    ``None`` or ``{}``: no variables. Otherwise a mapping of names
    (``[A-Za-z_][A-Za-z0-9_]*``) to strings, for an app template without a
    warm pool; anything else is a 400 saying what was wrong."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise bad_request(f"env must be an object of name -> string, got {type(raw).__name__}")
    if not raw:
        return None
    env: dict[str, str] = {}
    size = 0
    for name, value in raw.items():
        if not isinstance(name, str) or not _NAME_RE.match(name):
            raise bad_request(f"env: {name!r} is not a variable name ([A-Za-z_][A-Za-z0-9_]*)")
        if not isinstance(value, str) or "\x00" in value:
            raise bad_request(f"env: {name} must be a string without NUL, got {value!r}")
        size += len(name) + len(value.encode("utf-8", "surrogatepass"))
        env[name] = value
    if size > MAX_ENV_BYTES:
        raise bad_request(f"env: {size} bytes of names and values, at most {MAX_ENV_BYTES}")
    if spec.kind != "app":
        raise WireError(
            400,
            "bad_request",
            f"env: template {spec.id!r} is a {spec.kind} template and runs no server; "
            "per-session env is for app templates (an exec's code sets its own variables)",
        )
    if spec.warm_pool > 0:
        raise WireError(
            400,
            "bad_request",
            f"env: template {spec.id!r} keeps warm servers (warm_pool = {spec.warm_pool}) that "
            "were started before this session, so its variables cannot reach them; set them "
            "in the template's command, or use an app template with warm_pool = 0",
        )
    return env
