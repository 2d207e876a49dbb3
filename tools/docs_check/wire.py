"""The wire check: every route the local backend serves is in docs/wire.md,
with every field its handler accepts (see the package's docstring)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .codebase import CodeBase, ModuleInfo
from .common import HTTP_METHODS, Finding, dotted_name
from .project import Project, Route


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
                    return dotted_name(p.annotation)
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
                    ann = {p.arg: dotted_name(p.annotation) for p in node.args.args if p.annotation}
                    for sub in ast.walk(node):
                        self._attr_assign(sub, ann)

    def _attr_assign(self, node: ast.AST, ann: dict[str, str | None]) -> None:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Attribute):
            t = dotted_name(node.annotation)
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
        if isinstance(v, ast.Call) and (name := dotted_name(v.func)):
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
    if isinstance(v, ast.Call) and dotted_name(v.func) in ("frozenset", "set") and v.args:
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
        if isinstance(f, ast.Attribute) and f.attr == "json" and dotted_name(f.value) == req:
            return True
        if (
            dotted_name(f) == "json.loads"
            and expr.args
            and dotted_name(expr.args[0]) == f"{req}.body"
        ):
            return True
        passes_req = [i for i, a in enumerate(expr.args) if dotted_name(a) == req]
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
            and dotted_name(expr.func) in _QUERY_PARSERS
            and expr.args
            and dotted_name(expr.args[0]) == f"{req}.query"
        ):
            return "?"  # the query string's parameters: "?from"
        key = self._key_read(expr, body, consts)
        if key is not None:
            return key + "."
        if isinstance(expr, ast.Call) and dotted_name(expr.func) in ("dict", "Mapping"):
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
            dotted_name(a) == req for _, a in args
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
    if isinstance(expr, ast.Attribute) and dotted_name(expr.value) == "self" and cls is not None:
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
