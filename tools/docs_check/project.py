"""The repository: its files, Markdown, Python sources, hatch scripts and
the routes its servers serve."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef,import-not-found,unused-ignore]

from .codebase import CodeBase, ModuleInfo
from .common import HATCH_COMMANDS, ROOT, SKIP_DIRS, parse_python
from .markdown import anchors_of


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
        this = Path(__file__).resolve().parent  # the checks' docstrings show the forms they read
        return sorted(
            {
                p
                for d in dirs
                if d.is_dir()
                for p in d.rglob("*.py")
                if not SKIP_DIRS.intersection(p.relative_to(self.root).parts)
                and this not in p.resolve().parents
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
            from .wire import served_routes  # the wire check reads the routes

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
