"""Reading the guest package's files as the text a sandbox is sent.

The programs of :mod:`collimate_rl.guest` are real modules (linted,
type-checked, imported by tests) that import each other relatively; a
sandbox gets each as ONE module. :func:`joined_source` makes it: a module's
top-level relative import of another guest module is where that module's
code goes (its body, less its docstring and ``__future__`` import, each
module once), so a piece several programs need (``separation.py``) exists
once in the package and in full in each program that carries it.

The join is made of the files' own text, statement by statement, never of
``ast.unparse``: what that prints depends on the Python that prints it (3.12
writes f-strings that older Pythons cannot read), and a sandbox's
interpreter need not be the host's.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Final

__all__ = ["GUEST_DIR", "guest_file", "joined_source"]

#: The guest package's folder.
GUEST_DIR: Final = Path(__file__).parent / "guest"


def guest_file(name: str) -> Path:
    """The file of the guest module ``name``, a path below the package
    without ``.py`` (``"kernel_program"``, ``"grader/spawner"``)."""
    return GUEST_DIR / f"{name}.py"


@functools.cache
def joined_source(name: str) -> str:
    """The guest module ``name`` and every guest module it imports, as one
    module's source: one ``from __future__ import annotations`` first, the
    module's docstring, then its body with each relative import replaced by
    the imported module's body (the first time only; a name imported under
    another name is bound to it there). A name two of the joined modules
    both define would silently replace the other's: that is refused."""
    parts = _inlined(guest_file(name).resolve(), set(), {}, keep_docstring=True)
    return "from __future__ import annotations\n" + "".join(parts)


def _text_of(lines: list[str], node: ast.stmt, path: Path, after: int) -> str:
    """The source lines of the top-level statement ``node`` (its decorators
    included), which must start on a line of its own after line ``after``."""
    decorators = getattr(node, "decorator_list", [])
    start = min([node.lineno] + [d.lineno for d in decorators])
    if start <= after or node.end_lineno is None:
        raise ValueError(f"{path}:{start}: one statement a line, to be joined")
    text = "".join(lines[start - 1 : node.end_lineno])
    return text if text.endswith("\n") else text + "\n"


def _inlined(
    path: Path, seen: set[Path], defined: dict[str, Path], *, keep_docstring: bool
) -> list[str]:
    seen.add(path)
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines(keepends=True)
    parts: list[str] = []
    last = 0
    for i, node in enumerate(ast.parse(source, str(path)).body):
        for inner in ast.walk(node):
            if isinstance(inner, ast.ImportFrom) and inner.level and inner is not node:
                raise ValueError(f"{path}: a relative import below the top level cannot be joined")
        text = _text_of(lines, node, path, last)
        last = node.end_lineno or last
        if i == 0 and not keep_docstring and _is_docstring(node):
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if isinstance(node, ast.ImportFrom) and node.level:
            target = _imported_file(path, node)
            if target not in seen:
                parts.extend(_inlined(target, seen, defined, keep_docstring=False))
            for alias in node.names:
                if alias.asname and alias.asname != alias.name:
                    parts.append(f"{alias.asname} = {alias.name}\n")
            continue
        for defined_name in _defines(node):
            first = defined.setdefault(defined_name, path)
            if first != path:
                raise ValueError(f"{defined_name} is defined by both {first} and {path}")
        parts.append(text)
    return parts


def _imported_file(importer: Path, node: ast.ImportFrom) -> Path:
    folder = importer.parent
    for _ in range(node.level - 1):
        folder = folder.parent
    if node.module is None:
        raise ValueError(f"{importer}: 'from . import ...' cannot be joined")
    target = folder.joinpath(*node.module.split(".")).with_suffix(".py").resolve()
    if GUEST_DIR.resolve() not in target.parents or not target.is_file():
        raise ValueError(f"{importer}: {node.module} is not a module of the guest package")
    return target


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _defines(node: ast.stmt) -> list[str]:
    """The module-level names ``node`` defines, but ``TYPE_CHECKING``
    (each module says it for itself) and what it imports."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign):
        targets = [node.target]
    names: list[str] = []
    for target in targets:
        elts = target.elts if isinstance(target, ast.Tuple) else [target]
        names += [e.id for e in elts if isinstance(e, ast.Name) and e.id != "TYPE_CHECKING"]
    return names
