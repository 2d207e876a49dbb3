"""The layers of core, and every other distribution on core's public API.

Core: no import cycle, and no import up the layers.

:data:`LAYERS` is the one declaration of core's layer order (docs/
architecture.md, "Layers of core", says why each layer is where it is). The
check reads every module of ``collimate_rl`` (this distribution's
``src/``) with :mod:`ast`, without importing anything, and builds the graph
of its imports of each other:

* every import counts: at module level, inside functions and methods
  (imported on use is still a dependency), relative ones resolved, and
  ``importlib.import_module("collimate_rl....")`` with a literal name;
* ``from pkg import name`` is an import of the submodule ``pkg.name`` when
  there is one, else of ``pkg``; ``import a.b.c`` is an import of
  ``a.b.c`` only (a package's ``__init__`` is a module of its own, with a
  layer of its own: the facades ``collimate_rl`` and ``collimate_rl.rewards``
  sit above the modules they re-export);
* an import under ``if TYPE_CHECKING:`` is for annotations only, never
  executed: it is left out of both rules (type checkers do not mind cycles),
  but one that points up or sideways must be listed in
  :data:`TYPE_CHECKING_UP` with the reason it is there (a knowing exception,
  not a way around the layers);
* loading a module by a name computed at run time (the plugin manager's
  built-ins, ``collimate serve``'s backend, ``local_backend``'s lazy
  attributes) is plugin loading, not an import: the modules loaded that way
  are core's modules like any other, checked for what they import.

Rules: every module is in exactly one layer; no cycle between modules; a
module imports modules of its own layer and of lower levels only (layers side
by side on one level do not import each other); a type-checking import up or
sideways is listed in :data:`TYPE_CHECKING_UP`.

And the folder tree is the layer diagram: the top-level entries of core (each
subpackage ``collimate_rl/<pkg>/`` and each module ``collimate_rl/<mod>.py``)
import each other without a cycle (:func:`folder_problems`). Every import
counts there, in functions and under ``TYPE_CHECKING`` too, but for the
type-checking ones listed in :data:`TYPE_CHECKING_UP`; the package facade
``collimate_rl/__init__.py`` is outside the graph, and a re-export facade of
:data:`FOLDER_FACADES` is a node of its own. Within one layer this is what
keeps two features from knowing each other both ways (the kernel and the
sandbox, the pipeline and its entry points).

The other distributions (every ``plugins/*/src``, the meta distribution's
``packages/collimate-rl/src``, the example plugin of ``integration-tests/*/src``),
read the same way (:func:`distribution_problems`):

* they reach core only through its public modules, :data:`PUBLIC_MODULES`:
  an import of any other module of core (one below a facade, one with a
  ``_`` part in its path) fails, and so does ``from <public module> import
  name`` of a name not in that module's ``__all__``. Each public module must
  exist, have a docstring and a literal ``__all__``, and no ``_`` part;
* no import cycle between the modules of one distribution, every import
  counted: module level, in functions, and under ``TYPE_CHECKING`` too (a
  plugin has no layers to excuse a knot).
"""

from __future__ import annotations

import ast
import re
import shutil
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = "collimate_rl"
SOURCE = Path(__file__).resolve().parents[1] / "src" / PACKAGE

#: Core's layers, lowest first. Each level holds one layer, or several side
#: by side that must not import each other. A pattern names one module (a
#: package by its name is its ``__init__``) or, ending in ``.*``, every module
#: below a package (not its ``__init__``).
LAYERS: tuple[dict[str, tuple[str, ...]], ...] = (
    {
        "foundation": (
            "collimate_rl.__about__",
            "collimate_rl.errors",
            "collimate_rl.wire",
            "collimate_rl.retry",
            "collimate_rl.seeds",
            "collimate_rl._websocket",
            "collimate_rl._aio",
            "collimate_rl._blocking",
            "collimate_rl._percentile",
            "collimate_rl._terminal",
            # reading guest/ as the text a sandbox is sent (it never imports it)
            "collimate_rl._guest_source",
            "collimate_rl.reports",
            "collimate_rl.reports.*",
        ),
        # code that runs in a sandbox, not in the SDK's process: it imports
        # nothing of core (tests/test_guest_code.py: the standard library only)
        "guest": ("collimate_rl.guest", "collimate_rl.guest.*"),
    },
    {"hooks": ("collimate_rl.plugins", "collimate_rl.plugins.*", "collimate_rl.cli")},
    {"rewards": ("collimate_rl.rewards.*",)},
    {
        "transports": (
            # (the send loops' pair: _transport/send/)
            "collimate_rl._transport",
            "collimate_rl._transport.*",
            "collimate_rl.client",
            "collimate_rl.client.*",
            "collimate_rl.gateway",
            "collimate_rl.gateway.*",
            "collimate_rl.nodes",
            "collimate_rl.nodes.*",
            "collimate_rl.transport",
            "collimate_rl.transport.*",
            "collimate_rl.builtin_transports",
            "collimate_rl.manifest",
            "collimate_rl.tunnel",
        ),
        "local backend": ("collimate_rl.local_backend", "collimate_rl.local_backend.*"),
    },
    {
        "sandbox": (
            "collimate_rl.sandbox",
            "collimate_rl.sandbox.*",
            "collimate_rl.fileio",
            "collimate_rl.egress",
            # Sandbox.kernel(): the client, its shared state (the guest program
            # it starts is guest/kernel_program.py)
            "collimate_rl.kernel",
            "collimate_rl.kernel.*",
            # the Python tool of one trajectory (kernel + sandbox), its text
            "collimate_rl.python_tool",
            "collimate_rl.python_tool.*",
        )
    },
    {
        "gateway flows": (
            "collimate_rl.gateway_flows",
            "collimate_rl.gateway_flows.*",
            "collimate_rl.template",
            "collimate_rl.fleetview",
            "collimate_rl.fleet",
            "collimate_rl.kubectl",
        )
    },
    {
        "grading": (
            "collimate_rl.pipeline",
            "collimate_rl.pipeline.*",
            "collimate_rl.grading",
            "collimate_rl.batch",
            "collimate_rl.packing",
            "collimate_rl.rewards",
        ),
        "browser": ("collimate_rl.browser",),
    },
    {
        "applications": (
            "collimate_rl",
            "collimate_rl.__main__",
            "collimate_rl.demo",
            "collimate_rl.dataset_grading",
            "collimate_rl.dataset_grading.*",
            "collimate_rl.testing",
            "collimate_rl.testing.*",
            "collimate_rl.views",
            "collimate_rl.views.*",
        )
    },
)

Layers = Sequence[Mapping[str, Sequence[str]]]

#: The type-checking imports of core that point up or sideways the layers,
#: ``(importer, imported)``, each with why it is there.
TYPE_CHECKING_UP: dict[tuple[str, str], str] = {
    (client, flow): "GatewayClient.env() / .session() are typed with the classes of the "
    "gateway flows, which register themselves with gateway.register_flows() (docs/"
    "architecture.md: where a lower layer needs something from above)"
    for client, flows in (
        ("collimate_rl.gateway._async", "collimate_rl.gateway_flows._async"),
        ("collimate_rl.gateway._sync", "collimate_rl.gateway_flows._sync"),
    )
    for flow in (f"{flows}.envs", f"{flows}.sessions")
}

#: Re-export facades that are a node of their own in the folder graph, apart
#: from the folder they open, each with why (every other package's
#: ``__init__`` belongs to its folder). ``collimate_rl/__init__.py``, every
#: public name, is outside the graph altogether: it sits above everything.
FOLDER_FACADES: dict[str, str] = {
    "collimate_rl.rewards": "the package's __init__ re-exports grade and friends (lazily, for "
    "the earlier import path collimate_rl.rewards.grade) from grading, which sits above the "
    "reward modules beside it: one folder, two layers (LAYERS puts the facade with grading); "
    "only the applications import the facade",
}

#: Core's public modules: all that the other distributions (plugins, the meta
#: distribution, the example plugin) may import of core, and of each only the
#: names of its ``__all__``. A plugin needing more of core asks for a public
#: name (re-exported by one of these) rather than importing where it lives.
PUBLIC_MODULES: frozenset[str] = frozenset(
    {
        "collimate_rl",  # every public name
        "collimate_rl.errors",
        "collimate_rl.seeds",
        "collimate_rl.plugins",  # hooks, announcements, framework versions
        "collimate_rl.rewards",  # specs, kinds, the dataset rows' columns
        "collimate_rl.client",
        "collimate_rl.gateway",
        "collimate_rl.nodes",
        "collimate_rl.transport",
        "collimate_rl.local_backend",  # the server, `collimate serve`, the cluster secret
        "collimate_rl.sandbox",
        "collimate_rl.kernel",
        "collimate_rl.python_tool",
        "collimate_rl.template",
        "collimate_rl.gateway_flows",
        "collimate_rl.grading",  # grade, GradeResult, sealing a result from the policy
        "collimate_rl.batch",
        "collimate_rl.browser",
        "collimate_rl.fleetview",
        "collimate_rl.fleet",
        "collimate_rl.kubectl",
        "collimate_rl.dataset_grading",
        "collimate_rl.testing",
        "collimate_rl.testing.tool_sabotage",  # hostile cells for the plugins' tool tests
    }
)


# --- reading the imports ----------------------------------------------------


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` (both dotted module names of core)."""

    source: str
    target: str
    where: str  # path:line of the import statement
    kind: str  # "module", "function" or "type-checking"
    #: ``from target import a, b``: the names taken that are no submodules
    names: tuple[str, ...] = ()


def modules_of(root: Path, package: str = PACKAGE) -> dict[str, Path]:
    """Every module of the package at ``root``, by dotted name (a package's
    ``__init__.py`` under the package's name)."""
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _Imports(ast.NodeVisitor):
    """The imports of one module, resolved to modules of the package."""

    def __init__(
        self,
        module: str,
        is_package: bool,
        modules: Mapping[str, Path],
        where: str,
        tops: Iterable[str] = (),
    ):
        self.module = module
        # the top-level packages whose imports are read (the module's own by default)
        self.tops = frozenset(tops) or {module.partition(".")[0]}
        self.package = module if is_package else module.rpartition(".")[0]
        self.modules = modules
        self.where = where
        self.edges: list[Edge] = []
        self.unknown: list[str] = []
        self._functions = 0
        self._type_checking = 0

    # context
    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._functions += 1
        self.generic_visit(node)
        self._functions -= 1

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_If(self, node: ast.If) -> None:
        if not _is_type_checking(node.test):
            self.generic_visit(node)
            return
        self._type_checking += 1
        for child in node.body:
            self.visit(child)
        self._type_checking -= 1
        for child in node.orelse:  # (the else branch does run)
            self.visit(child)

    # imports
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node.lineno, must_exist=True)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.package.split(".")
            if node.level > 1:
                base = base[: -(node.level - 1)]
            dotted = ".".join([*base, node.module] if node.module else base)
        else:
            dotted = node.module or ""
        if not self._ours(dotted):
            return
        attributes = []
        for alias in node.names:
            if f"{dotted}.{alias.name}" in self.modules:
                self._add(f"{dotted}.{alias.name}", node.lineno)
            else:
                attributes.append(alias.name)
        if attributes:
            self._add(dotted, node.lineno, must_exist=True, names=tuple(attributes))

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if (
            name == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            self._add(node.args[0].value, node.lineno, must_exist=True)
        self.generic_visit(node)

    def _ours(self, dotted: str) -> bool:
        return dotted.partition(".")[0] in self.tops

    def _add(
        self, dotted: str, line: int, must_exist: bool = False, names: tuple[str, ...] = ()
    ) -> None:
        if not self._ours(dotted):
            return
        target = dotted
        while target not in self.modules and "." in target:
            target = target.rpartition(".")[0]
        if must_exist and target != dotted:
            self.unknown.append(f"{self.where}:{line}: {dotted} is not a module of core")
        if target == self.module:
            return
        kind = (
            "type-checking" if self._type_checking else "function" if self._functions else "module"
        )
        self.edges.append(Edge(self.module, target, f"{self.where}:{line}", kind, names))


@dataclass
class Graph:
    modules: dict[str, Path]
    edges: list[Edge]
    unknown: list[str]  # imports of names that are no module of core


def read_graph(root: Path, package: str = PACKAGE) -> Graph:
    """The import graph of the package at ``root`` (every edge, type-checking
    ones included: :func:`problems` decides what counts)."""
    modules = modules_of(root, package)
    edges: list[Edge] = []
    unknown: list[str] = []
    for name, path in modules.items():
        where = str(path.relative_to(root.parent))
        visitor = _Imports(name, path.name == "__init__.py", modules, where)
        visitor.visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        edges += visitor.edges
        unknown += visitor.unknown
    return Graph(modules, edges, unknown)


# --- the rules --------------------------------------------------------------


def _matches(module: str, pattern: str) -> bool:
    if pattern.endswith(".*"):
        return module.startswith(pattern[:-1])
    return module == pattern


def placement(
    modules: Iterable[str], layers: Layers
) -> tuple[dict[str, tuple[int, str]], list[str]]:
    """Each module's ``(level, layer)``, and what is wrong with the table: a
    module in no layer or in several, a pattern that matches nothing."""
    placed: dict[str, tuple[int, str]] = {}
    problems: list[str] = []
    used: set[str] = set()
    for module in sorted(modules):
        hits = [
            (level, layer, pattern)
            for level, side_by_side in enumerate(layers)
            for layer, patterns in side_by_side.items()
            for pattern in patterns
            if _matches(module, pattern)
        ]
        used.update(pattern for _, _, pattern in hits)
        if not hits:
            problems.append(f"{module} is in no layer: add it to LAYERS ({Path(__file__).name})")
        elif len(hits) > 1:
            shown = ", ".join(f"{pattern!r} ({layer})" for _, layer, pattern in hits)
            problems.append(f"{module} is matched by several patterns: {shown}")
        else:
            placed[module] = hits[0][:2]
    for side_by_side in layers:
        for layer, patterns in side_by_side.items():
            problems += [
                f"pattern {p!r} of layer {layer!r} matches no module"
                for p in patterns
                if p not in used
            ]
    return placed, problems


def _counted(edges: Iterable[Edge]) -> list[Edge]:
    """The edges the rules count: every import that runs."""
    return [e for e in edges if e.kind != "type-checking"]


def cycles(
    edges: Iterable[Edge], type_checking: bool = False
) -> list[tuple[list[str], list[Edge]]]:
    """Each strongly connected component of more than one module (Tarjan,
    iterative), with its shortest cycle through its first module (as edges).
    ``type_checking``: count the imports under ``TYPE_CHECKING`` too."""
    out_edges: dict[str, list[Edge]] = defaultdict(list)
    for e in list(edges) if type_checking else _counted(edges):
        out_edges[e.source].append(e)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    for start in sorted(out_edges):
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            nexts = out_edges.get(node, [])
            if i < len(nexts):
                work.append((node, i + 1))
                target = nexts[i].target
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return [(c, _a_cycle(set(c), out_edges)) for c in components]


def _a_cycle(component: set[str], out_edges: Mapping[str, list[Edge]]) -> list[Edge]:
    """The shortest cycle through the component's first module (breadth first)."""
    start = min(component)
    came: dict[str, Edge] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for e in out_edges.get(node, []):
                if e.target not in component or e.target in came:
                    continue
                came[e.target] = e
                if e.target == start:
                    path = [e]
                    while path[-1].source != start:
                        path.append(came[path[-1].source])
                    return path[::-1]
                following.append(e.target)
        frontier = following
    raise AssertionError(f"no cycle through {start}")  # pragma: no cover


def upward(edges: Iterable[Edge], placed: Mapping[str, tuple[int, str]]) -> list[str]:
    """Every counted import of a higher level, or of a layer side by side."""
    found = []
    for e in _counted(edges):
        if e.source not in placed or e.target not in placed:
            continue  # reported by placement()
        (lo, lo_layer), (hi, hi_layer) = placed[e.source], placed[e.target]
        if hi > lo or (hi == lo and hi_layer != lo_layer):
            how = "up" if hi > lo else "sideways"
            found.append(
                f"{e.where}: {e.source} (layer {lo_layer!r}, level {lo}) imports {e.target} "
                f"(layer {hi_layer!r}, level {hi}): {how} the layers ({e.kind} import)"
            )
    return found


def typing_upward(
    edges: Iterable[Edge],
    placed: Mapping[str, tuple[int, str]],
    listed: Mapping[tuple[str, str], str],
) -> list[str]:
    """Every type-checking import up or sideways that ``listed`` does not
    give a reason for, and every listed pair that is no such import (any
    more)."""
    found = []
    seen: set[tuple[str, str]] = set()
    for e in edges:
        if e.kind != "type-checking" or e.source not in placed or e.target not in placed:
            continue
        (lo, lo_layer), (hi, hi_layer) = placed[e.source], placed[e.target]
        if not (hi > lo or (hi == lo and hi_layer != lo_layer)):
            continue
        seen.add((e.source, e.target))
        if (e.source, e.target) in listed:
            continue
        how = "up" if hi > lo else "sideways"
        found.append(
            f"{e.where}: {e.source} (layer {lo_layer!r}, level {lo}) imports {e.target} "
            f"(layer {hi_layer!r}, level {hi}) under TYPE_CHECKING: {how} the layers, and not "
            f"in TYPE_CHECKING_UP ({Path(__file__).name}): list it there with the reason, "
            "or import it from below"
        )
    found += [
        f"TYPE_CHECKING_UP lists {source} -> {target}, which is no type-checking import "
        "up or sideways the layers: remove it"
        for source, target in sorted(set(listed) - seen)
    ]
    return found


def _cycle_lines(edges: Iterable[Edge], type_checking: bool = False) -> list[str]:
    found = []
    for component, cycle in cycles(edges, type_checking):
        line = " -> ".join([cycle[0].source, *(e.target for e in cycle)])
        line += " (" + ", ".join(e.where for e in cycle) + ")"
        if len(component) > len(cycle):
            line += f"; {len(component)} modules in cycles together: {', '.join(component)}"
        found.append("import cycle: " + line)
    return found


def problems(
    graph: Graph, layers: Layers, typing_up: Mapping[tuple[str, str], str] | None = None
) -> list[str]:
    """Everything wrong with ``graph`` under ``layers`` (and the list of
    type-checking imports up the layers ``typing_up``), as readable lines."""
    placed, found = placement(graph.modules, layers)
    found += graph.unknown
    found += _cycle_lines(graph.edges)
    found += upward(graph.edges, placed)
    found += typing_upward(graph.edges, placed, typing_up or {})
    return found


def folder_of(module: str, facades: Iterable[str] = FOLDER_FACADES) -> str | None:
    """The top-level entry of core that ``module`` is part of (``sandbox``
    for ``collimate_rl.sandbox._async``, ``errors`` for ``collimate_rl.errors``),
    a listed re-export facade's own node (``rewards/__init__``), or None for
    the package facade itself."""
    if module in facades:
        return module.partition(".")[2].replace(".", "/") + "/__init__"
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def folder_edges(
    graph: Graph,
    typing_up: Mapping[tuple[str, str], str] = TYPE_CHECKING_UP,
    facades: Iterable[str] = FOLDER_FACADES,
) -> list[Edge]:
    """The graph of core's top-level entries: one edge per ordered pair of
    folders, standing for the first import that makes it (its ``where`` names
    that import). Every import counts, in functions and under
    ``TYPE_CHECKING`` too, but a type-checking one listed in ``typing_up``."""
    facades = frozenset(facades)
    first: dict[tuple[str, str], Edge] = {}
    for e in graph.edges:
        if e.kind == "type-checking" and (e.source, e.target) in typing_up:
            continue
        a, b = folder_of(e.source, facades), folder_of(e.target, facades)
        if a is None or b is None or a == b:
            continue
        where = f"{e.where} {e.source} imports {e.target} ({e.kind} import)"
        first.setdefault((a, b), Edge(a, b, where, e.kind))
    return list(first.values())


def folder_problems(
    graph: Graph,
    typing_up: Mapping[tuple[str, str], str] = TYPE_CHECKING_UP,
    facades: Iterable[str] = FOLDER_FACADES,
) -> list[str]:
    """Each cycle between core's top-level entries, named with one import per
    edge."""
    found = []
    for component, cycle in cycles(folder_edges(graph, typing_up, facades), type_checking=True):
        line = "folder cycle: " + " -> ".join([cycle[0].source, *(e.target for e in cycle)])
        line += "".join(f"\n  {e.source} -> {e.target}: {e.where}" for e in cycle)
        if len(component) > len(cycle):
            line += f"\n  ({len(component)} folders in cycles together: {', '.join(component)})"
        found.append(line)
    return found


# --- core -------------------------------------------------------------------


@pytest.fixture(scope="module")
def core() -> Graph:
    return read_graph(SOURCE)


def test_every_module_of_core_is_in_one_layer(core: Graph) -> None:
    _, found = placement(core.modules, LAYERS)
    assert not found, "\n".join(found)
    assert not core.unknown, "\n".join(core.unknown)


def test_core_has_no_import_cycle(core: Graph) -> None:
    found = [f for f in problems(core, LAYERS, TYPE_CHECKING_UP) if f.startswith("import cycle")]
    assert not found, "\n".join(found)


def test_no_module_of_core_imports_up_the_layers(core: Graph) -> None:
    placed, _ = placement(core.modules, LAYERS)
    found = upward(core.edges, placed)
    assert not found, "\n".join(found)


def test_every_type_checking_import_of_core_up_the_layers_is_listed(core: Graph) -> None:
    placed, _ = placement(core.modules, LAYERS)
    found = typing_upward(core.edges, placed, TYPE_CHECKING_UP)
    assert not found, "\n".join(found)
    assert all(reason.strip() for reason in TYPE_CHECKING_UP.values())


def test_the_folders_of_core_form_no_cycle(core: Graph) -> None:
    found = folder_problems(core)
    assert not found, "\n".join(found)
    assert all(reason.strip() for reason in FOLDER_FACADES.values())
    assert set(FOLDER_FACADES) <= set(core.modules)
    # the tree is the diagram: the twins live in their features' packages
    folders = {folder_of(name) for name in core.modules}
    assert not {"_async", "_sync"} & folders
    assert {"sandbox", "kernel", "python_tool", "client", "gateway", "transport"} <= folders


def test_the_check_is_fast() -> None:
    # (CPU time: the machines running the suite are shared)
    started = time.process_time()
    assert problems(read_graph(SOURCE), LAYERS, TYPE_CHECKING_UP) == []
    assert time.process_time() - started < 2.0


# --- the check catches what it is for ----------------------------------------


@pytest.fixture
def copy_of_core(tmp_path: Path) -> Path:
    """A copy of core's sources to plant imports in."""
    root = tmp_path / PACKAGE
    shutil.copytree(SOURCE, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _plant(root: Path, module: str, code: str) -> None:
    with (root / module).open("a", encoding="utf-8") as fh:
        fh.write("\n" + code + "\n")


def test_a_planted_cycle_fails_the_check(copy_of_core: Path) -> None:
    # retry imports wire: wire importing retry closes a cycle (one layer, so
    # a cycle and nothing else)
    _plant(copy_of_core, "wire.py", "from .retry import RetryPolicy")
    found = problems(read_graph(copy_of_core), LAYERS, TYPE_CHECKING_UP)
    assert len(found) == 1, found
    assert found[0].startswith("import cycle: ")
    cycle = found[0].split(" (")[0].removeprefix("import cycle: ").split(" -> ")
    assert set(cycle) == {"collimate_rl.wire", "collimate_rl.retry"}
    assert cycle[0] == cycle[-1]


def test_a_planted_upward_import_fails_the_check(copy_of_core: Path) -> None:
    # a function-level import counts: a foundation module using the hooks
    _plant(
        copy_of_core,
        "_aio.py",
        "def _planted():\n    from .plugins.frameworks import module_version\n"
        "    return module_version",
    )
    found = problems(read_graph(copy_of_core), LAYERS, TYPE_CHECKING_UP)
    assert len(found) == 1, found
    assert found[0].startswith(f"{PACKAGE}/_aio.py:")
    assert (
        "collimate_rl._aio (layer 'foundation', level 0) imports collimate_rl.plugins.frameworks "
        "(layer 'hooks', level 1): up the layers (function import)"
    ) in found[0]


def test_a_planted_sideways_import_fails_the_check(copy_of_core: Path) -> None:
    # the local backend never knows the client code, nor the client the server
    _plant(copy_of_core, "local_backend/usage.py", "from ..client import CollimateClient")
    found = problems(read_graph(copy_of_core), LAYERS, TYPE_CHECKING_UP)
    assert len(found) == 1, found
    assert "(layer 'local backend', level 3) imports collimate_rl.client" in found[0]
    assert "(layer 'transports', level 3): sideways the layers" in found[0]


def test_a_planted_folder_back_edge_fails_the_check(copy_of_core: Path) -> None:
    # the kernel typed with the sandbox it lives in: annotations only, one
    # layer, no module cycle, so the module rules let it pass; the folders
    # kernel <-> sandbox are a cycle (the kernel declares AsyncKernelHost)
    path = copy_of_core / "kernel" / "_async.py"
    text = path.read_text(encoding="utf-8")
    path.write_text(
        text.replace(
            "\n__all__ = ",
            "\nfrom typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from ..sandbox._async import AsyncSandbox\n\n__all__ = ",
            1,
        ),
        encoding="utf-8",
    )
    graph = read_graph(copy_of_core)
    assert problems(graph, LAYERS, TYPE_CHECKING_UP) == []
    found = folder_problems(graph)
    assert len(found) == 1, found
    lines = found[0].splitlines()
    assert lines[0] == "folder cycle: kernel -> sandbox -> kernel"
    assert lines[1].startswith("  kernel -> sandbox: collimate_rl/kernel/_async.py:")
    assert lines[1].endswith(
        "collimate_rl.kernel._async imports collimate_rl.sandbox._async (type-checking import)"
    )
    assert lines[2].startswith("  sandbox -> kernel: collimate_rl/sandbox/")


def test_a_planted_function_import_back_edge_fails_the_folder_check(copy_of_core: Path) -> None:
    # fileio (below the sandbox's package, which uses it) reaching into it on use
    _plant(
        copy_of_core,
        "fileio.py",
        "def _planted():\n    from .sandbox._state import ExecResult\n    return ExecResult",
    )
    graph = read_graph(copy_of_core)
    assert problems(graph, LAYERS, TYPE_CHECKING_UP) == []
    found = folder_problems(graph)
    assert len(found) == 1, found
    assert found[0].startswith("folder cycle: fileio -> sandbox -> fileio\n")
    assert "collimate_rl.fileio imports collimate_rl.sandbox._state (function import)" in found[0]


def test_a_listed_facade_is_a_node_of_its_own(core: Graph) -> None:
    # without the exception, the rewards folder (below grading) and its
    # facade (above it) would be one node, and a cycle through grading
    found = folder_problems(core, facades=())
    assert len(found) == 1, found
    assert "rewards" in found[0].splitlines()[0] and "grading" in found[0]
    assert "collimate_rl.rewards imports collimate_rl.grading" in found[0]


def test_a_new_module_must_be_given_a_layer(copy_of_core: Path) -> None:
    (copy_of_core / "newcomer.py").write_text("X = 1\n", encoding="utf-8")
    found = problems(read_graph(copy_of_core), LAYERS, TYPE_CHECKING_UP)
    assert found == [
        f"collimate_rl.newcomer is in no layer: add it to LAYERS ({Path(__file__).name})"
    ]


# --- docs/architecture.md's layer table is LAYERS -----------------------------

ARCHITECTURE = Path(__file__).resolve().parents[3] / "docs" / "architecture.md"


def doc_layers(text: str) -> dict[str, tuple[int, list[str]]]:
    """The table under "## Layers of core": each layer's level and the paths
    its modules column names (``errors.py``, ``reports/``, ``_async``,
    ``collimate_rl/__init__.py``), relative to the package."""
    section = text.split("## Layers of core", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, tuple[int, list[str]]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].isdigit():
            continue
        paths = [p.removeprefix(PACKAGE + "/") for p in re.findall(r"`([^`\s]+)`", cells[2])]
        rows[cells[1]] = (int(cells[0]), paths)
    return rows


def _covers(entry: str, relative: str) -> bool:
    if entry.endswith("/"):
        return relative.startswith(entry)
    if entry.endswith(".py"):
        return relative == entry
    return relative in (entry + ".py", entry + "/__init__.py")


def doc_table_problems(text: str, layers: Layers, root: Path = SOURCE) -> list[str]:
    """Where the document's layer table and :data:`LAYERS` disagree: a layer
    at another level or missing, a path that names no module, a module the
    table leaves out or puts in another layer than the code does (the most
    specific path naming a module is the one that counts)."""
    rows = doc_layers(text)
    found: list[str] = []
    levels = {layer: level for level, side in enumerate(layers) for layer in side}
    for layer, level in levels.items():
        if layer not in rows:
            found.append(f"layer {layer!r} has no row in the table")
        elif rows[layer][0] != level:
            found.append(
                f"layer {layer!r} is at level {rows[layer][0]} in the table, {level} in LAYERS"
            )
    found += [
        f"the table's layer {layer!r} is not in LAYERS" for layer in rows if layer not in levels
    ]
    modules = modules_of(root)
    placed, _ = placement(modules, layers)
    relatives = {m: path.relative_to(root).as_posix() for m, path in modules.items()}
    used: set[tuple[str, str]] = set()
    for module, relative in sorted(relatives.items()):
        hits = [
            (len(entry), layer, entry)
            for layer, (_, entries) in rows.items()
            for entry in entries
            if _covers(entry, relative)
        ]
        if not hits:
            found.append(f"{relative} ({module}) is in no row of the table")
            continue
        _, layer, entry = max(hits)
        used.add((layer, entry))
        if module in placed and placed[module][1] != layer:
            found.append(
                f"{relative} is in layer {layer!r} in the table, {placed[module][1]!r} in LAYERS"
            )
    found += [
        f"the table's {entry!r} ({layer}) names no module"
        for layer, (_, entries) in rows.items()
        for entry in entries
        if (layer, entry) not in used
    ]
    return found


def test_the_architecture_documents_layer_table_is_layers() -> None:
    assert doc_table_problems(ARCHITECTURE.read_text(encoding="utf-8"), LAYERS) == []


def test_a_wrong_layer_table_fails_the_check() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    moved = text.replace("| `errors.py`, ", "| ", 1).replace(
        "| `local_backend/` |", "| `local_backend/`, `errors.py` |", 1
    )
    assert moved != text, "the planted change found its place in the table"
    assert doc_table_problems(moved, LAYERS) == [
        "errors.py is in layer 'local backend' in the table, 'foundation' in LAYERS"
    ]
    assert doc_table_problems(text + "\n", [*LAYERS, {"extra": ()}]) == [
        "layer 'extra' has no row in the table"
    ]


def test_how_imports_are_read(tmp_path: Path) -> None:
    """Relative imports resolved, ``from . import x`` as the submodule,
    function-level imports counted, TYPE_CHECKING ones left out, names
    given to ``importlib.import_module`` read."""
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "from . import low\n",
        "low.py": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n"
            "    from .high import High\n"  # annotations only: allowed up
            "def f():\n"
            "    from .sub import deep\n"  # a function's import counts
            "    return deep\n"
        ),
        "high.py": "class High: ...\n",
        "sub/__init__.py": "",
        "sub/deep.py": (
            "from .. import low, high\n"  # two submodules of the parent
            "import importlib\n"
            "def g():\n"
            "    return importlib.import_module('pkg.high')\n"
        ),
    }
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    graph = read_graph(root, "pkg")
    got = {(e.source, e.target, e.kind) for e in graph.edges}
    assert got == {
        ("pkg", "pkg.low", "module"),
        ("pkg.low", "pkg.high", "type-checking"),
        ("pkg.low", "pkg.sub.deep", "function"),
        ("pkg.sub.deep", "pkg.low", "module"),
        ("pkg.sub.deep", "pkg.high", "module"),
        ("pkg.sub.deep", "pkg.high", "function"),
    }
    layers = ({"low": ("pkg.low",)}, {"high": ("pkg", "pkg.high", "pkg.sub", "pkg.sub.*")})
    found = problems(graph, layers, {("pkg.low", "pkg.high"): "annotations only"})
    # low -> sub.deep (up, in a function) and the cycle low -> deep -> low;
    # not low -> high: that one is for the type checker only
    assert [f for f in found if f.startswith("import cycle")] == [
        "import cycle: pkg.low -> pkg.sub.deep -> pkg.low (pkg/low.py:5, pkg/sub/deep.py:1)"
    ]
    ups = [f for f in found if not f.startswith("import cycle")]
    assert len(ups) == 1 and ups[0].startswith("pkg/low.py:5: pkg.low (layer 'low', level 0)")
    assert "imports pkg.sub.deep (layer 'high', level 1): up the layers (function import)" in ups[0]


# --- the other distributions: core's public API only, no cycle ---------------

ROOT = SOURCE.parents[3]
CORE_SRC = SOURCE.parent


def distribution_sources(root: Path = ROOT) -> list[Path]:
    """The ``src/`` of every distribution of the monorepo but core: the
    plugins, the meta distribution, the example plugin of the integration
    tests."""
    found = [
        *sorted(root.glob("plugins/*/src")),
        *sorted(root.glob("packages/*/src")),
        *sorted(root.glob("integration-tests/*/src")),
    ]
    return [src for src in found if src.resolve() != CORE_SRC]


def source_modules(src: Path) -> dict[str, Path]:
    """Every module under a distribution's ``src/``, by dotted name."""
    found: dict[str, Path] = {}
    for path in sorted(src.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _literal_all(tree: ast.Module) -> frozenset[str] | None:
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            try:
                return frozenset(ast.literal_eval(node.value))  # type: ignore[union-attr,arg-type]
            except ValueError:
                return None
    return None


def _extended_all(core: Graph, name: str, path: Path, tree: ast.Module) -> frozenset[str]:
    """The names ``__all__ += sibling.__all__`` adds (a facade re-exporting a
    submodule's list): ``sibling`` bound by ``from . import sibling [as x]``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    bound = {
        alias.asname or alias.name: f"{package}.{alias.name}"
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module is None
        for alias in node.names
    }
    added: set[str] = set()
    for node in tree.body:
        if not (
            isinstance(node, ast.AugAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == "__all__"
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "__all__"
            and isinstance(node.value.value, ast.Name)
        ):
            continue
        module = bound.get(node.value.value.id)
        sub = core.modules.get(module) if module else None
        if sub is not None:
            sub_tree = ast.parse(sub.read_text(encoding="utf-8"), filename=str(sub))
            added |= _literal_all(sub_tree) or frozenset()
    return frozenset(added)


def public_api(
    core: Graph, public: Iterable[str] = PUBLIC_MODULES
) -> tuple[dict[str, frozenset[str]], list[str]]:
    """Each public module's ``__all__``, and what is wrong with the list: a
    name that is no module of core, a private one, one without a docstring
    or a literal ``__all__``."""
    api: dict[str, frozenset[str]] = {}
    found: list[str] = []
    for name in sorted(public):
        path = core.modules.get(name)
        if path is None:
            found.append(f"PUBLIC_MODULES names {name}, which is no module of core")
            continue
        if any(part.startswith("_") for part in name.split(".")):
            found.append(f"PUBLIC_MODULES names {name}, a private module (a part starting with _)")
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        if not ast.get_docstring(tree):
            found.append(f"{name} is public but has no docstring")
        names = _literal_all(tree)
        if names is not None:
            names |= _extended_all(core, name, path, tree)
        if names is None:
            found.append(f"{name} is public but has no literal __all__")
        api[name] = names or frozenset()
    return api, found


def distribution_problems(src: Path, core: Graph, api: Mapping[str, frozenset[str]]) -> list[str]:
    """Everything wrong with the distribution at ``src``: an import of core
    that is not of a public module (or of a name not in its ``__all__``), an
    import of a module that is neither core's nor its own, an import cycle
    between its modules (every import counted, ``TYPE_CHECKING`` ones too)."""
    own = source_modules(src)
    found = [
        f"{src}: {name} is a module of core too" for name in sorted(set(own) & set(core.modules))
    ]
    modules = {**core.modules, **own}
    tops = {PACKAGE, *(name.partition(".")[0] for name in own)}
    edges: list[Edge] = []
    for name, path in own.items():
        where = str(path.relative_to(src.parent.parent))
        visitor = _Imports(name, path.name == "__init__.py", modules, where, tops)
        visitor.visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        edges += visitor.edges
        found += [
            u.replace(
                "is not a module of core", "is a module of neither core nor this distribution"
            )
            for u in visitor.unknown
        ]
    for e in edges:
        if e.target in own:
            continue
        if e.target not in api:
            found.append(
                f"{e.where}: {e.source} imports {e.target} ({e.kind} import), which is not one of "
                f"core's public modules (PUBLIC_MODULES, {Path(__file__).name}): import a "
                "public name of a public module instead"
            )
            continue
        hidden = [n for n in e.names if n not in api[e.target]]
        if hidden:
            found.append(
                f"{e.where}: {e.source} imports {', '.join(hidden)} from {e.target} "
                f"({e.kind} import), not in its __all__: not public"
            )
    found += _cycle_lines([e for e in edges if e.target in own], type_checking=True)
    return found


in_the_monorepo = pytest.mark.skipif(
    not (ROOT / "plugins").is_dir(), reason="the monorepo's other distributions (not in an sdist)"
)


@pytest.fixture(scope="module")
def core_api(core: Graph) -> dict[str, frozenset[str]]:
    return public_api(core)[0]


def test_every_public_module_of_core_is_documented(core: Graph) -> None:
    _, found = public_api(core)
    assert not found, "\n".join(found)


@in_the_monorepo
def test_every_distribution_is_read() -> None:
    names = {src.parent.name for src in distribution_sources()}
    assert {
        "collimate-rl",
        "collimate-rl-ray",
        "collimate-rl-trl",
        "reward-plugin-example",
    } <= names
    assert "collimate-rl-core" not in names


@in_the_monorepo
@pytest.mark.parametrize("src", distribution_sources(), ids=lambda src: src.parent.name)
def test_distribution_uses_core_public_api_only_and_has_no_cycle(
    src: Path, core: Graph, core_api: dict[str, frozenset[str]]
) -> None:
    found = distribution_problems(src, core, core_api)
    assert not found, "\n".join(found)


# --- the distribution check catches what it is for ------------------------------


def _fake_distribution(tmp_path: Path, files: Mapping[str, str]) -> Path:
    """A plugin's ``src/`` holding ``files`` in a package ``fake`` of the
    namespace package (as the plugins lay theirs out)."""
    src = tmp_path / "collimate-rl-fake" / "src"
    for name, text in {"__init__.py": '"""A fake plugin."""\n', **files}.items():
        path = src / PACKAGE / "fake" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return src


def test_a_clean_fake_plugin_passes(
    tmp_path: Path, core: Graph, core_api: dict[str, frozenset[str]]
) -> None:
    src = _fake_distribution(
        tmp_path,
        {
            "plugin.py": (
                "from collimate_rl import grade\n"
                "from collimate_rl.plugins import hookimpl, module_version\n"
                "from collimate_rl.local_backend import SECRET_HEADER\n"
                "from . import rows\n"
            ),
            "rows.py": "def f():\n    from collimate_rl.rewards import ENTRY_COLUMNS\n",
        },
    )
    assert distribution_problems(src, core, core_api) == []


def test_a_planted_private_import_fails_the_check(
    tmp_path: Path, core: Graph, core_api: dict[str, frozenset[str]]
) -> None:
    src = _fake_distribution(
        tmp_path,
        {
            "a.py": "from collimate_rl.python_tool._text import DEFAULT_TOOL_TEXT_LIMIT\n",
            # imported on use is an import all the same
            "b.py": "def f():\n    from collimate_rl.local_backend.cli import main\n",
        },
    )
    found = distribution_problems(src, core, core_api)
    assert len(found) == 2, found
    assert found[0].startswith("collimate-rl-fake/src/collimate_rl/fake/a.py:1: ")
    assert (
        "collimate_rl.fake.a imports collimate_rl.python_tool._text (module import), which is not "
        "one of core's public modules"
    ) in found[0]
    assert found[1].startswith("collimate-rl-fake/src/collimate_rl/fake/b.py:2: ")
    assert "imports collimate_rl.local_backend.cli (function import), which is not" in found[1]


def test_a_planted_internal_import_fails_the_check(
    tmp_path: Path, core: Graph, core_api: dict[str, frozenset[str]]
) -> None:
    # a module below a facade, a name a public module keeps to itself, a
    # module that is nobody's
    src = _fake_distribution(
        tmp_path,
        {
            "a.py": "from collimate_rl.rewards.rows import ENTRY_COLUMNS\n",
            "b.py": "from collimate_rl.local_backend import _LAZY, main\n",
            "c.py": "import collimate_rl.nowhere\n",
        },
    )
    found = distribution_problems(src, core, core_api)
    assert len(found) == 3, found
    assert "fake/c.py:1: collimate_rl.nowhere is a module of neither core nor" in found[0]
    assert "collimate_rl.fake.a imports collimate_rl.rewards.rows (module import)" in found[1]
    assert (
        "collimate_rl.fake.b imports _LAZY from collimate_rl.local_backend (module import), "
        "not in its __all__"
    ) in found[2]


def test_a_planted_plugin_cycle_fails_the_check(
    tmp_path: Path, core: Graph, core_api: dict[str, frozenset[str]]
) -> None:
    # closed by an import for annotations only: it counts in a plugin
    src = _fake_distribution(
        tmp_path,
        {
            "a.py": "from .b import B\nclass A: ...\n",
            "b.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from .a import A\n"
                "class B: ...\n"
            ),
        },
    )
    found = distribution_problems(src, core, core_api)
    assert found == [
        "import cycle: collimate_rl.fake.a -> collimate_rl.fake.b -> collimate_rl.fake.a "
        "(collimate-rl-fake/src/collimate_rl/fake/a.py:1, "
        "collimate-rl-fake/src/collimate_rl/fake/b.py:3)"
    ]


def test_a_planted_type_checking_import_up_fails_the_check(copy_of_core: Path) -> None:
    _plant(
        copy_of_core,
        "_aio.py",
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from .plugins.frameworks import module_version",
    )
    graph = read_graph(copy_of_core)
    found = problems(graph, LAYERS, TYPE_CHECKING_UP)
    assert len(found) == 1, found
    assert found[0].startswith(f"{PACKAGE}/_aio.py:")
    assert (
        "collimate_rl._aio (layer 'foundation', level 0) imports collimate_rl.plugins.frameworks "
        "(layer 'hooks', level 1) under TYPE_CHECKING: up the layers, and not in "
        "TYPE_CHECKING_UP"
    ) in found[0]
    # listed with a reason, it passes
    listed = {**TYPE_CHECKING_UP, ("collimate_rl._aio", "collimate_rl.plugins.frameworks"): "x"}
    assert problems(graph, LAYERS, listed) == []


def test_a_stale_type_checking_exception_fails_the_check(core: Graph) -> None:
    listed = {**TYPE_CHECKING_UP, ("collimate_rl.wire", "collimate_rl.client"): "gone"}
    assert problems(core, LAYERS, listed) == [
        "TYPE_CHECKING_UP lists collimate_rl.wire -> collimate_rl.client, which is no "
        "type-checking import up or sideways the layers: remove it"
    ]


def test_a_wrong_public_module_fails_the_check(core: Graph) -> None:
    _, found = public_api(
        core, {"collimate_rl._aio", "collimate_rl.nowhere", "collimate_rl.pipeline"}
    )
    assert found == [
        "PUBLIC_MODULES names collimate_rl._aio, a private module (a part starting with _)",
        "PUBLIC_MODULES names collimate_rl.nowhere, which is no module of core",
        "collimate_rl.pipeline is public but has no literal __all__",
    ]
