"""The layers of core: no import cycle, and no import up the layers.

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
  executed: it is left out of both rules (type checkers do not mind cycles);
* loading a module by a name computed at run time (the plugin manager's
  built-ins, ``collimate serve``'s backend, ``local_backend``'s lazy
  attributes) is plugin loading, not an import: the modules loaded that way
  are core's modules like any other, checked for what they import.

Rules: every module is in exactly one layer; no cycle between modules; a
module imports modules of its own layer and of lower levels only (layers side
by side on one level do not import each other).
"""

from __future__ import annotations

import ast
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
            "collimate_rl._async",
            "collimate_rl._sync",
            "collimate_rl.reports",
            "collimate_rl.reports.*",
        )
    },
    {"hooks": ("collimate_rl.plugins", "collimate_rl.plugins.*", "collimate_rl.cli")},
    {"rewards": ("collimate_rl.rewards.*",)},
    {
        "transports": (
            "collimate_rl._transport",
            "collimate_rl._transport.*",
            "collimate_rl.client",
            "collimate_rl._async.client",
            "collimate_rl._sync.client",
            "collimate_rl._async.send",
            "collimate_rl._sync.send",
            "collimate_rl._async.multi_node_client",
            "collimate_rl._sync.multi_node_client",
            "collimate_rl.gateway",
            "collimate_rl._async.gateway",
            "collimate_rl._sync.gateway",
            "collimate_rl.nodes",
            "collimate_rl.nodes.*",
            "collimate_rl.transport",
            "collimate_rl._async.session_client",
            "collimate_rl._sync.session_client",
            "collimate_rl.builtin_transports",
            "collimate_rl.manifest",
            "collimate_rl.tunnel",
        ),
        "local backend": ("collimate_rl.local_backend", "collimate_rl.local_backend.*"),
    },
    {
        "sandbox": (
            "collimate_rl.sandbox",
            "collimate_rl._sandbox_state",
            "collimate_rl._async.sandbox",
            "collimate_rl._sync.sandbox",
            "collimate_rl.fileio",
            "collimate_rl.egress",
            # Sandbox.kernel(): the client, its shared state, the guest program
            "collimate_rl.kernel",
            "collimate_rl._kernel_state",
            "collimate_rl._kernel_program",
            "collimate_rl._async.kernel",
            "collimate_rl._sync.kernel",
            # the Python tool of one trajectory (kernel + sandbox), its text
            "collimate_rl.python_tool",
            "collimate_rl._tool_text",
            "collimate_rl._async.python_tool",
            "collimate_rl._sync.python_tool",
        )
    },
    {
        "gateway flows": (
            "collimate_rl.gateway_flows",
            "collimate_rl.gateway_flows.*",
            "collimate_rl._async.sessions",
            "collimate_rl._sync.sessions",
            "collimate_rl._async.templates",
            "collimate_rl._sync.templates",
            "collimate_rl._async.envs",
            "collimate_rl._sync.envs",
            "collimate_rl._async.fork_group",
            "collimate_rl._sync.fork_group",
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
            "collimate_rl._async.grading",
            "collimate_rl._async.admission",
            "collimate_rl._sync.admission",
            "collimate_rl._sync.grading",
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


# --- reading the imports ----------------------------------------------------


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` (both dotted module names of core)."""

    source: str
    target: str
    where: str  # path:line of the import statement
    kind: str  # "module", "function" or "type-checking"


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

    def __init__(self, module: str, is_package: bool, modules: Mapping[str, Path], where: str):
        self.module = module
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
        attributes = False
        for alias in node.names:
            if f"{dotted}.{alias.name}" in self.modules:
                self._add(f"{dotted}.{alias.name}", node.lineno)
            else:
                attributes = True
        if attributes:
            self._add(dotted, node.lineno, must_exist=True)

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
        top = self.module.partition(".")[0]
        return dotted == top or dotted.startswith(top + ".")

    def _add(self, dotted: str, line: int, must_exist: bool = False) -> None:
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
        self.edges.append(Edge(self.module, target, f"{self.where}:{line}", kind))


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


def cycles(edges: Iterable[Edge]) -> list[tuple[list[str], list[Edge]]]:
    """Each strongly connected component of more than one module (Tarjan,
    iterative), with its shortest cycle through its first module (as edges)."""
    out_edges: dict[str, list[Edge]] = defaultdict(list)
    for e in _counted(edges):
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


def problems(graph: Graph, layers: Layers) -> list[str]:
    """Everything wrong with ``graph`` under ``layers``, as readable lines."""
    placed, found = placement(graph.modules, layers)
    found += graph.unknown
    for component, cycle in cycles(graph.edges):
        line = " -> ".join([cycle[0].source, *(e.target for e in cycle)])
        line += " (" + ", ".join(e.where for e in cycle) + ")"
        if len(component) > len(cycle):
            line += f"; {len(component)} modules in cycles together: {', '.join(component)}"
        found.append("import cycle: " + line)
    found += upward(graph.edges, placed)
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
    found = [f for f in problems(core, LAYERS) if f.startswith("import cycle")]
    assert not found, "\n".join(found)


def test_no_module_of_core_imports_up_the_layers(core: Graph) -> None:
    placed, _ = placement(core.modules, LAYERS)
    found = upward(core.edges, placed)
    assert not found, "\n".join(found)


def test_the_check_is_fast() -> None:
    # (CPU time: the machines running the suite are shared)
    started = time.process_time()
    assert problems(read_graph(SOURCE), LAYERS) == []
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
    found = problems(read_graph(copy_of_core), LAYERS)
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
    found = problems(read_graph(copy_of_core), LAYERS)
    assert len(found) == 1, found
    assert found[0].startswith(f"{PACKAGE}/_aio.py:")
    assert (
        "collimate_rl._aio (layer 'foundation', level 0) imports collimate_rl.plugins.frameworks "
        "(layer 'hooks', level 1): up the layers (function import)"
    ) in found[0]


def test_a_planted_sideways_import_fails_the_check(copy_of_core: Path) -> None:
    # the local backend never knows the client code, nor the client the server
    _plant(copy_of_core, "local_backend/usage.py", "from ..client import CollimateClient")
    found = problems(read_graph(copy_of_core), LAYERS)
    assert len(found) == 1, found
    assert "(layer 'local backend', level 3) imports collimate_rl.client" in found[0]
    assert "(layer 'transports', level 3): sideways the layers" in found[0]


def test_a_new_module_must_be_given_a_layer(copy_of_core: Path) -> None:
    (copy_of_core / "newcomer.py").write_text("X = 1\n", encoding="utf-8")
    found = problems(read_graph(copy_of_core), LAYERS)
    assert found == [
        f"collimate_rl.newcomer is in no layer: add it to LAYERS ({Path(__file__).name})"
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
    found = problems(graph, layers)
    # low -> sub.deep (up, in a function) and the cycle low -> deep -> low;
    # not low -> high: that one is for the type checker only
    assert [f for f in found if f.startswith("import cycle")] == [
        "import cycle: pkg.low -> pkg.sub.deep -> pkg.low (pkg/low.py:5, pkg/sub/deep.py:1)"
    ]
    ups = [f for f in found if not f.startswith("import cycle")]
    assert len(ups) == 1 and ups[0].startswith("pkg/low.py:5: pkg.low (layer 'low', level 0)")
    assert "imports pkg.sub.deep (layer 'high', level 1): up the layers (function import)" in ups[0]
