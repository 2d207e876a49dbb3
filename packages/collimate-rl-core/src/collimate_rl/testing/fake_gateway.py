"""The gateway's sandbox routes (docs/wire.md §3) over a :class:`FakeDaemon`.

Enough of the gateway to hold a :class:`~collimate_rl.GatewayClient` to the
session-surface conformance suite and to its own rules: Bearer ``col_*``
auth on everything but ``/v1/health``, the ``{code, message}`` envelope,
``not_found`` for unknown objects, the catalog under ``images``, and the demo
tier's concurrent-sandbox cap answered with ``demo_tier_limit`` and a
human message. Template baking, forks and usage are out of its scope
(they answer 404 ``not_found``).
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx

from .fake_daemon import FakeDaemon

__all__ = ["DEMO_LIMIT_MESSAGE", "FakeGateway"]

_KEY = re.compile(r"^Bearer col_(demo|pro|ent)_\S+$")
_CODE_MAP = {"no_such_session": "not_found", "no_template": "not_found"}
DEMO_LIMIT_MESSAGE = (
    "Demo keys run up to {limit} sandboxes at once. Upgrade to pro for more: "
    "https://collimate.ai/pricing"
)


class FakeGateway:
    """Mount with ``httpx.MockTransport(gateway)``. ``demo_limit`` is the
    demo tier's concurrent-sandbox cap."""

    def __init__(self, daemon: FakeDaemon | None = None, *, demo_limit: int = 8) -> None:
        self.daemon = daemon or FakeDaemon()
        self.demo_limit = demo_limit
        self.requests: list[tuple[str, str, str | None]] = []
        self._owned = daemon is None

    def close(self) -> None:
        if self._owned:
            self.daemon.close()

    def __enter__(self) -> FakeGateway:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        auth = request.headers.get("authorization")
        status, payload = self.handle(request.method, request.url.path, request.content, auth)
        return httpx.Response(status, json=payload)

    def mock_transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)

    def handle(
        self, method: str, path: str, raw: bytes, authorization: str | None
    ) -> tuple[int, Any]:
        self.requests.append((method, path, authorization))
        if (method, path) == ("GET", "/v1/health"):
            return 200, {"status": "ok", "version": "fake-gateway"}
        match = _KEY.match(authorization or "")
        if match is None:
            return 401, {"code": "unauthorized", "message": "missing or invalid API key"}
        tier = match.group(1)
        parts = path.strip("/").split("/")[1:]
        if parts == ["images"] and method == "GET":
            return 200, {"images": [self._image(t) for t in sorted(self.daemon.templates)]}
        if parts == ["sandboxes"]:
            if method == "GET":
                return self._forward("GET", "/v1/sessions", b"", self._sandbox_list)
            if method == "POST":
                if tier == "demo" and self.daemon.session_count >= self.demo_limit:
                    message = DEMO_LIMIT_MESSAGE.format(limit=self.demo_limit)
                    return 429, {"code": "demo_tier_limit", "message": message}
                body = _rename(raw, "template", "template_id")
                return self._forward("POST", "/v1/sessions", body, _sandbox)
        if len(parts) == 2 and parts[0] == "sandboxes":
            if method == "GET":
                return self._forward("GET", f"/v1/sessions/{parts[1]}", b"", _sandbox)
            if method == "DELETE":
                status, payload = self.daemon.handle("DELETE", f"/v1/sessions/{parts[1]}", b"")
                if status == 404:
                    return 404, {"code": "not_found", "message": f"no sandbox {parts[1]}"}
                return status, {"deleted": payload["deleted"], "id": parts[1]}
        if len(parts) == 3 and parts[0] == "sandboxes" and parts[2] == "exec" and method == "POST":
            return self._forward("POST", f"/v1/sessions/{parts[1]}/exec", raw, lambda p: p)
        return 404, {"code": "not_found", "message": "not found"}

    def _forward(self, method: str, path: str, raw: bytes, shape: Any) -> tuple[int, Any]:
        status, payload = self.daemon.handle(method, path, raw)
        if status >= 400:
            code = payload.get("error_code")
            envelope = {"code": _CODE_MAP.get(code, code), "message": payload.get("error")}
            return status, envelope
        return (200 if status == 201 else status), shape(payload)

    @staticmethod
    def _sandbox_list(payload: list[dict[str, Any]]) -> dict[str, Any]:
        return {"sandboxes": [_sandbox(p) for p in payload]}

    @staticmethod
    def _image(template_id: str) -> dict[str, Any]:
        return {
            "id": template_id,
            "name": template_id,
            "image": f"catalog/{template_id}:latest",
            "visibility": "public",
            "tier": "demo",
            "description": f"the {template_id} template",
        }


def _sandbox(payload: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in payload.items() if k not in ("session_id", "template_id")}
    out["id"] = payload["session_id"]
    out["template"] = payload["template_id"]
    out.setdefault("state", "running")
    return out


def _rename(raw: bytes, old: str, new: str) -> bytes:
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        return raw
    if isinstance(body, dict) and old in body:
        body[new] = body.pop(old)
    return json.dumps(body).encode()
