"""docs/wire.md keeps up with the servers: every route the local backend
serves (the daemon wire, the gateway wire, SandboxFusion's routes) is written
there as ``METHOD PATH``, and every field its handler accepts is named in
that route's section (``tools/docs_check/``: the routes and the fields are
read from the routers' sources with ast, following the request body into
the functions it is passed to).

A field a handler starts to accept (``env`` on a session create, once
undocumented) fails this test until the page names it; a planted tree shows
an undocumented route and an undocumented field reported.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[3]


def test_every_served_route_and_field_is_in_wire_md(docs_check: ModuleType) -> None:
    dc = docs_check
    findings = dc.wire_findings(dc.Project(ROOT))
    assert not findings, "docs/wire.md lacks:\n" + "\n".join(map(str, findings))


def test_the_routes_and_fields_found_are_the_servers(docs_check: ModuleType) -> None:
    """What the checker reads from the routers, pinned where it matters: a
    reader that lost a wire, a route or the way bodies are followed would
    make the check above pass vacuously."""
    dc = docs_check
    routes = {(r.module.rsplit(".", 1)[-1], str(r)): r for r in dc.Project(ROOT).routes}
    wires = {module for module, _ in routes}
    assert wires == {"daemon_wire", "gateway_wire", "sandbox_fusion"}
    assert len([k for k in routes if k[0] == "daemon_wire"]) >= 8
    assert len([k for k in routes if k[0] == "gateway_wire"]) >= 17

    def fields(module: str, route: str) -> set[str]:
        return set(routes[(module, route)].fields)

    # the daemon's session create: its checked field set, env included
    assert fields("daemon_wire", "POST /v1/sessions") == {"template_id", "egress", "env"}
    exec_fields = {"command", "commands", "code", "files", "timeout_seconds", "seed", "id"}
    assert exec_fields <= fields("daemon_wire", "POST /v1/exec")
    # the gateway's: bodies followed into the sandbox and bake books
    assert exec_fields <= fields("gateway_wire", "POST /v1/sandboxes/{id}/exec")
    assert {"template", "template_id", "label", "labels", "egress"} == fields(
        "gateway_wire", "POST /v1/sandboxes"
    )
    assert {"name", "image", "ready", "pool", "expected_width"} == fields(
        "gateway_wire", "POST /v1/templates"
    )
    assert {"ready.cmd", "ready.http", "pool.width"} <= set(
        routes[("gateway_wire", "POST /v1/templates")].nested
    )
    assert {"count", "labels"} == fields("gateway_wire", "POST /v1/sandboxes/{id}/fork")
    assert {"from", "to"} == fields("gateway_wire", "GET /v1/usage")  # query parameters
    # SandboxFusion's: read from the body through a helper taking the field's name
    assert {
        "code",
        "language",
        "stdin",
        "compile_timeout",
        "run_timeout",
        "memory_limit_MB",
        "files",
        "fetch_files",
    } == fields("sandbox_fusion", "POST /run_code")


PLANTED = {
    "packages/core/src/collimate_rl/__init__.py": "",
    "packages/core/src/collimate_rl/local_backend/__init__.py": "",
    "packages/core/src/collimate_rl/local_backend/fields.py": """
        THING_FIELDS = frozenset({"name", "size"})


        def check_fields(body, allowed):
            return [k for k in body if k not in allowed]
    """,
    "packages/core/src/collimate_rl/local_backend/service.py": """
        class Service:
            def make(self, body):
                inner = self._inner(body.get("opts"))
                return {"name": body.get("name"), "colour": body["colour"], "inner": inner}

            def _inner(self, opts):
                return opts.get("depth")
    """,
    "packages/core/src/collimate_rl/local_backend/daemon_wire.py": """
        from .fields import THING_FIELDS, check_fields
        from .service import Service


        def build(router, service: Service):
            async def health(req, p):
                return service.health()

            async def make(req, p):
                body = req.json()
                check_fields(body, THING_FIELDS)
                return service.make(body)

            async def drop(req, p):
                return None

            router.add("GET", "/v1/health", health)
            router.add("POST", "/v1/things", make)
            router.add("DELETE", "/v1/things/{id}", drop)
            return router
    """,
    "docs/wire.md": """
        # Wire

        ## 1. Health

        `GET /v1/health`: no body.

        ## 2. Things

        | request | body |
        |---|---|
        | `POST /v1/things` | `{name, size}` |

        ## 3. Options

        `opts` is `{depth}`.
    """,
}


def test_an_undocumented_route_and_field_are_reported(
    docs_check: ModuleType, tmp_path: Path
) -> None:
    dc = docs_check
    for rel, text in PLANTED.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    project = dc.Project(tmp_path)
    (make,) = [r for r in project.routes if str(r) == "POST /v1/things"]
    assert make.fields == {"name", "size", "colour", "opts"}
    assert make.nested == {"opts.depth"}
    found = {(f.kind, f.ref) for f in dc.wire_findings(project)}
    assert found == {
        ("wire-route", "DELETE /v1/things/{id}"),  # served, not on the page
        ("wire-field", "POST /v1/things colour"),  # accepted, not in its section
        # `opts` is named on the page, but in another section than the route's
        ("wire-field", "POST /v1/things opts"),
    }
    # a nested field is found anywhere on the page: `depth` is, so no finding
