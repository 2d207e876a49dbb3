"""The names check: every reference the docs, the READMEs and the docstrings
and comments make resolves (see the package's docstring for what is read)."""

from __future__ import annotations

import ast
import builtins
import io
import re
import sys
import tokenize
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from .codebase import ModuleInfo
from .common import (
    EXTERNAL,
    EXTERNAL_FILES,
    FILE_SUFFIXES,
    HTTP_METHODS,
    OUR_PACKAGES,
    SKIP_DIRS,
    Finding,
    class_members,
    parse_python,
    resolve_relative,
    target_names,
    top_statements,
)
from .markdown import FENCE, strip_fences
from .project import Project

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
        for m in FENCE.finditer(markdown):
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
        scanned = Text(strip_fences(raw, keep=("bash", "sh", "python", "py", "toml", "")), path, 1)
        prose = Text(strip_fences(raw), path, 1)
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
        for stmt in top_statements(scope):
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                if stmt.name == part:
                    found = stmt
            elif isinstance(stmt, ast.Assign | ast.AnnAssign):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if any(part in set(target_names(t)) for t in targets):
                    found = stmt
            elif isinstance(stmt, ast.ImportFrom | ast.Import) and any(
                (a.asname or a.name.split(".")[0]) == part for a in stmt.names
            ):
                found = stmt
        if found is None:
            return False
        if not isinstance(found, ast.ClassDef):
            return True
        if i + 1 < len(parts) and parts[i + 1] in class_members(found):
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
