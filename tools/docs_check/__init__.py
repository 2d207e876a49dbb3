"""Docs that cannot rot silently: the names the docs give, and the wire the servers keep.

Two checks, both reading sources with :mod:`ast` (nothing of the project is
imported, so they run in any environment, in a few seconds):

**Names** (:func:`name_findings`). Every reference that ``docs/*.md``, the
READMEs (the root's, each distribution's, ``benchmarks/``,
``integration-tests/``, ...) and the docstrings and comments of core and
the plugins (their sources and tests; the benchmarks', the reliability
proofs', the integration tests' and the tools' too) make must resolve:

* dotted names of our packages (``collimate_rl.pipeline.targets.unpackable``,
  ``collimate_rl.verl:compute_score``): the module exists, and the name after
  it is defined there (a class's member too, when a class is named);
* relative names in docstrings and comments (``:mod:`..program```,
  ``:func:`~.wire.to_json```, a backticked ``.pack``), resolved from the
  module they are written in as a relative import would be, and the targets
  of Sphinx roles (``:class:`Router```: the module, its class, then the whole
  code base);
* file paths (``packages/.../x.py``, ``tests/test_y.py``,
  ``tests/test_reliability_*.py``, ``local_backend/routing.py``, a bare
  ``daemon_wire.py``), and the function a ``file.py: name`` / ``file.py::name``
  points at;
* HTTP routes (``GET /v1/health``, ``POST /run_code``, a backticked
  ``/v1/images``): a route the local backend's routers serve;
* ``hatch run env:script`` commands: a script of ``hatch.toml``;
* Markdown links to files of the repository (and their ``#anchors``), and the
  ``from collimate_rl... import ...`` lines of the Markdown's Python blocks.

Other projects' names (``verl/utils/...``, ``skyrl_gym``) are left alone
when they are imported where they are named, or listed in :data:`EXTERNAL`
(with why each is there); output samples (```` ```text ````, ```` ```json ````
blocks) are not read.

**Wire** (:func:`wire_findings`). Every route the local backend serves (the
daemon wire, the gateway wire, SandboxFusion's routes: any
``router.add(METHOD, PATH, handler)`` or ``(METHOD, PATH, handler)`` row of a
module of ``collimate_rl.local_backend``) is written ``METHOD PATH`` in
``docs/wire.md``, and every field its handler accepts is named (as code) in
that route's section, or in a section its row points at (``section 1``). The
fields are found by following the request body through the handler with
:mod:`ast`: the body is ``req.json()``, ``json.loads(req.body)`` or a helper
returning one; a field is ``body.get("x")``, ``body["x"]``, ``"x" in body``,
or a module-level set of field names the body is checked against
(``check_fields(body, EXEC_FIELDS, ...)``); the body is followed into the
functions and methods it is passed to (``service.create_session(body)``,
``self.bakes.create(who, req.json())``). A field of a nested object
(``ready.cmd``) must be named somewhere in the page.

``python tools/docs_check`` prints what both checks find (exit 1 if
anything; ``--routes`` lists the routes and their fields too);
``packages/collimate-rl-core/tests/test_docs_names.py`` and
``test_docs_wire.py`` run them on every ``hatch test``, and show each kind of
finding on a planted tree.

The package: ``names.py`` and ``wire.py`` are the two checks; what both read
is ``project.py`` (the repository: files, Markdown, hatch scripts, routes),
``codebase.py`` (our packages' modules as ast sees them), ``markdown.py``
(fences, anchors) and ``common.py`` (the lists of names, a finding, the ast
helpers); ``__main__.py`` is the command.
"""

from __future__ import annotations

from collections.abc import Sequence

from .codebase import CodeBase, ModuleInfo
from .common import EXTERNAL, ROOT, Finding, resolve_relative
from .names import NameChecker, name_check, name_findings
from .project import Project, Route
from .wire import served_routes, wire_findings

__all__ = [
    "EXTERNAL",
    "ROOT",
    "CodeBase",
    "Finding",
    "ModuleInfo",
    "NameChecker",
    "Project",
    "Route",
    "main",
    "name_check",
    "name_findings",
    "resolve_relative",
    "served_routes",
    "wire_findings",
]


def main(argv: Sequence[str] = ()) -> int:
    project = Project()
    checker = name_check(project)
    names = checker.findings
    wire = wire_findings(project)
    print("references checked:", ", ".join(f"{n} {k}" for k, n in checker.checked.most_common()))
    for f in [*names, *wire]:
        print(f)
    print(
        f"{len(names)} name findings, {len(wire)} wire findings "
        f"({len(project.routes)} routes served)"
    )
    if "--routes" in argv:
        for r in project.routes:
            where = f"{r.module}.{r.handler}"
            print(f"  {r}  [{where}] fields={sorted(r.fields)} nested={sorted(r.nested)}")
    return 1 if names or wire else 0
