"""The gateway's routes (docs/wire.md §3) as request descriptions, and the small
translations between its records and the daemon's. No I/O here: the sync and
async gateway clients share all of it and differ only in how they send."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import CollimateError
from .calls import Call, delete, exec_call, get, post, segment


def as_session(sandbox: Mapping[str, Any], template_id: str | None = None) -> dict[str, Any]:
    """A gateway sandbox record with the daemon's session keys added."""
    out = dict(sandbox)
    if "id" in out:
        out.setdefault("session_id", out["id"])
    template = out.get("template", template_id)
    if template is not None:
        out.setdefault("template_id", template)
    return out


def ready_body(ready: Any) -> Any:
    """A ``ReadySpec`` as JSON: a mapping as is, a ``Ready`` object through
    its own serializer (``to_dict`` / ``as_dict``)."""
    if ready is None or isinstance(ready, Mapping):
        return dict(ready) if ready is not None else None
    for name in ("to_dict", "as_dict", "to_wire"):
        method = getattr(ready, name, None)
        if callable(method):
            return method()
    raise TypeError(f"ready must be a mapping or a Ready, got {type(ready).__name__}")


# --- the gateway routes, described once -------------------------------------


def health() -> Call:
    return get("/v1/health", auth=False)


def images() -> Call:
    return get("/v1/images")


def images_of(body: Any) -> list[dict[str, Any]]:
    if isinstance(body, list):
        return body
    return list(body.get("images", body.get("templates")) or [])


def create_template(
    name: str,
    image: str,
    ready: Any,
    width: int,
    cold_fraction: float,
    expected_width: int | None,
) -> Call:
    body: dict[str, Any] = {
        "name": name,
        "image": image,
        "pool": {"width": int(width), "cold_fraction": cold_fraction},
    }
    ready_json = ready_body(ready)
    if ready_json is not None:
        body["ready"] = ready_json
    if expected_width is not None:
        body["expected_width"] = int(expected_width)
    # The template id is derived from the request: sending it twice is harmless.
    return post("/v1/templates", body, idempotent=True)


def get_template(template_id: str) -> Call:
    return get(f"/v1/templates/{segment(template_id)}")


def list_templates() -> Call:
    return get("/v1/templates")


def delete_template(template_id: str) -> Call:
    return delete(
        f"/v1/templates/{segment(template_id)}", if_missing={"deleted": False, "id": template_id}
    )


def expect(template_id: str, width: int) -> Call:
    return post(
        f"/v1/templates/{segment(template_id)}/expect", {"width": int(width)}, idempotent=True
    )


def release(template_id: str) -> Call:
    return post(f"/v1/templates/{segment(template_id)}/release", {}, idempotent=True)


def create_sandbox(
    template: str,
    label: str | None,
    labels: Mapping[str, str] | None,
    egress: Mapping[str, Any] | None,
) -> Call:
    body: dict[str, Any] = {"template": template}
    if label is not None:
        body["label"] = label
    if labels is not None:
        body["labels"] = dict(labels)
    if egress is not None:
        body["egress"] = dict(egress)
    return post("/v1/sandboxes", body, idempotent=False)


def list_sandboxes() -> Call:
    return get("/v1/sandboxes")


def get_sandbox(sandbox_id: str) -> Call:
    return get(f"/v1/sandboxes/{segment(sandbox_id)}")


def delete_sandbox(sandbox_id: str) -> Call:
    return delete(
        f"/v1/sandboxes/{segment(sandbox_id)}", if_missing={"deleted": False, "id": sandbox_id}
    )


def exec_in(sandbox_id: str, body: Mapping[str, Any], client_timeout: float) -> Call:
    return exec_call(f"/v1/sandboxes/{segment(sandbox_id)}/exec", body, client_timeout)


def fork(sandbox_id: str, count: int, labels: Any) -> Call:
    body: dict[str, Any] = {"count": int(count)}
    if labels is not None:
        body["labels"] = dict(labels) if isinstance(labels, Mapping) else list(labels)
    return post(f"/v1/sandboxes/{segment(sandbox_id)}/fork", body, idempotent=False)


def state_change(sandbox_id: str, verb: str) -> Call:
    # Suspend/resume set a target state: repeating one is harmless.
    return post(f"/v1/sandboxes/{segment(sandbox_id)}/{verb}", {}, idempotent=True)


def usage(from_ts: str | None, to_ts: str | None) -> Call:
    params = {k: v for k, v in (("from", from_ts), ("to", to_ts)) if v is not None}
    return get("/v1/usage", params=params or None)


def created_id(sandbox: Any) -> str:
    """The id of a sandbox just created; an answer without one is a broken
    gateway, said plainly (not a ``KeyError`` from deep inside exec_once)."""
    sandbox_id = sandbox.get("id") if isinstance(sandbox, Mapping) else None
    if not sandbox_id:
        raise CollimateError(f"the gateway created a sandbox but sent no id: {sandbox!r:.200}")
    return str(sandbox_id)


def deleted_session(answer: Mapping[str, Any], session_id: str) -> dict[str, Any]:
    out = dict(answer)
    out["deleted"] = bool(out.get("deleted"))
    out["session_id"] = session_id
    return out


# --- services reached from outside (connect URLs) ---------------------------

#: the longest a connect URL may live (the gateway's contract: one hour);
#: a longer ask is clamped here, before it is sent
CONNECT_URL_MAX_TTL = 3600
#: the Chrome DevTools port a browser template serves (``cdp_url``)
CDP_PORT = 9222
#: how the tunnel carries bytes: raw (``tcp``) or as whole DevTools messages (``cdp``)
CONNECT_PROTOCOLS = ("tcp", "cdp")


def connect_url(sandbox_id: str, port: int, ttl_seconds: float, protocol: str) -> Call:
    """``POST /v1/sandboxes/{id}/connect-url``. Bad arguments fail here, before
    anything is sent; minting forks nothing and runs nothing, so it may be
    repeated."""
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ValueError(f"port must be an int in 1..65535, got {port!r}")
    if protocol not in CONNECT_PROTOCOLS:
        raise ValueError(f"protocol must be 'tcp' or 'cdp', got {protocol!r}")
    ttl = max(1, min(int(ttl_seconds), CONNECT_URL_MAX_TTL))
    body: dict[str, Any] = {"port": port, "ttl_seconds": ttl}
    if protocol != "tcp":  # a tcp mint is the same request as before cdp existed
        body["protocol"] = protocol
    return post(f"/v1/sandboxes/{segment(sandbox_id)}/connect-url", body, idempotent=True)


def minted_url(answer: Any) -> str:
    """The ``url`` of a connect-url answer; an answer without one is a broken
    gateway, said plainly."""
    url = answer.get("url") if isinstance(answer, Mapping) else None
    if not isinstance(url, str) or not url.startswith(("ws://", "wss://")):
        raise CollimateError(f"the gateway minted no ws:// or wss:// url: {answer!r:.200}")
    return url
