"""A request as data, and what its answer means. No I/O here.

Describing each call once (method, path, body, whether it is idempotent, how
long its answer may take, what "already gone" means for it) is what lets the
sync and async clients share everything but the act of sending.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote

from ..errors import CollimateError
from ..retry import exec_read_timeout
from ..wire import error_from_response

__all__ = [
    "MISSING_STATUSES",
    "Argvs",
    "Call",
    "Files",
    "decode_answer",
    "delete",
    "exec_call",
    "exec_once_request",
    "get",
    "post",
    "segment",
]

#: An exec's ``files`` (``{path, content}`` each) and ``commands`` (argv lists),
#: as both clients' signatures take them.
Files = Sequence[Mapping[str, str]]
Argvs = Sequence[Sequence[str]]

#: Statuses that mean "the object does not exist (any more)": a delete that
#: gets one has nothing left to do, so teardown stays idempotent.
MISSING_STATUSES: Final = frozenset({404, 410})


@dataclass(frozen=True)
class Call:
    """One HTTP request of the wire contract.

    ``idempotent`` drives the retry policy; ``read_timeout`` overrides the
    client's timeout (execs wait longer); ``auth`` is False for the one
    gateway route without a key (``/v1/health``); when ``if_missing`` is set,
    a 404/410 answer returns it instead of raising.
    """

    method: str
    path: str
    body: Mapping[str, Any] | None = None
    params: Mapping[str, str] | None = None
    idempotent: bool = True
    read_timeout: float | None = None
    auth: bool = True
    if_missing: Mapping[str, Any] | None = None


def get(path: str, *, params: Mapping[str, str] | None = None, auth: bool = True) -> Call:
    return Call("GET", path, params=params, auth=auth)


def post(
    path: str,
    body: Mapping[str, Any],
    *,
    idempotent: bool,
    read_timeout: float | None = None,
) -> Call:
    """A POST; say explicitly whether repeating it is harmless."""
    return Call("POST", path, body=body, idempotent=idempotent, read_timeout=read_timeout)


def delete(path: str, *, if_missing: Mapping[str, Any]) -> Call:
    return Call("DELETE", path, if_missing=if_missing)


def exec_call(path: str, body: Mapping[str, Any], client_timeout: float) -> Call:
    """An exec: never repeated blindly (it may have run), and its answer is
    awaited past the exec's own timeout (see :func:`exec_read_timeout`)."""
    read = exec_read_timeout(client_timeout, body.get("timeout_seconds"))
    return post(path, body, idempotent=False, read_timeout=read)


def exec_once_request(
    template_id: str, body: Mapping[str, Any], egress: Mapping[str, Any] | None
) -> dict[str, Any]:
    """A one-shot exec's request: the exec ``body`` with the template to clone
    and the egress policy of the clone (what the daemon's ``POST /v1/exec``
    takes, and what the exec observers are shown of either wire's)."""
    request = {"template_id": template_id, **body}
    if egress is not None:
        request["egress"] = dict(egress)
    return request


def segment(value: str) -> str:
    """An opaque id as exactly one path segment (an id with ``/`` or ``..``
    cannot address another route)."""
    return quote(str(value), safe="")


def decode_answer(call: Call, status: int, content: bytes, *, gateway: bool) -> Any:
    """The parsed JSON of a 2xx answer, or raise the typed error of any other.

    A 2xx whose body is not JSON is a broken server (or the wrong one behind
    the URL): it raises rather than handing garbage to a grader.
    """
    if 200 <= status < 300:
        if not content.strip():
            return {}
        try:
            return json.loads(content)
        except ValueError:
            raise CollimateError(
                f"{call.method} {call.path}: the server answered {status} with a body "
                f"that is not JSON: {content[:200]!r}",
                status,
                None,
                body=content[:2000],
            ) from None
    if call.if_missing is not None and status in MISSING_STATUSES:
        return dict(call.if_missing)
    body: Any
    try:
        body = json.loads(content) if content else None
    except ValueError:
        body = None
    raise error_from_response(
        status, body, gateway=gateway, fallback_text=content[:500].decode("utf-8", "replace")
    )
