"""The code base, as ast sees it: our packages' modules, their definitions,
imports and classes, and how a dotted name resolves in them."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .common import (
    OUR_PACKAGES,
    SKIP_DIRS,
    class_members,
    dotted_name,
    parse_python,
    resolve_relative,
    target_names,
    top_statements,
)


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
    star_imports: list[str] = field(default_factory=list)  # ``from X import *``: the X
    strings: set[str] = field(default_factory=set)  # for a lazy __getattr__
    has_getattr: bool = False
    script: bool = False  # a test or a tool, not a module of a package

    @property
    def package(self) -> str:
        return self.name if self.is_package else self.name.rpartition(".")[0]


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
        for stmt in top_statements(tree.body):
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
                    for n in target_names(t):
                        mod.defs[n] = stmt
            elif isinstance(stmt, ast.AnnAssign | ast.AugAssign):
                for n in target_names(stmt.target):
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
                    if alias.name == "*":
                        mod.star_imports.append(base)
                    else:
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
        for star in mod.star_imports:  # (our modules' star imports follow __all__)
            if star in self.modules and self._in_module(self.modules[star], rest, seen) is None:
                return None
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
            module, node, class_members(node), [d for d in map(dotted_name, node.bases) if d]
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
