"""Reading the guest package's files as the text a sandbox is sent.

The programs of :mod:`collimate_rl.guest` are real modules (linted,
type-checked, imported by tests) that import each other relatively; a
sandbox gets each as ONE module. :func:`joined_source` makes it: a module's
top-level relative import of another guest module is where that module's
code goes (its body, less its docstring and ``__future__`` import, each
module once), so a piece several programs need (``separation.py``) exists
once in the package and in full in each program that carries it.
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
    body = _inlined(guest_file(name).resolve(), set(), {}, keep_docstring=True)
    tree = ast.Module(body=body, type_ignores=[])
    return "from __future__ import annotations\n" + ast.unparse(ast.fix_missing_locations(tree))


def _inlined(
    path: Path, seen: set[Path], defined: dict[str, Path], *, keep_docstring: bool
) -> list[ast.stmt]:
    seen.add(path)
    body: list[ast.stmt] = []
    for i, node in enumerate(ast.parse(path.read_text(encoding="utf-8"), str(path)).body):
        if i == 0 and not keep_docstring and _is_docstring(node):
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if isinstance(node, ast.ImportFrom) and node.level:
            target = _imported_file(path, node)
            if target not in seen:
                body.extend(_inlined(target, seen, defined, keep_docstring=False))
            for alias in node.names:
                if alias.asname and alias.asname != alias.name:
                    body.append(ast.parse(f"{alias.asname} = {alias.name}").body[0])
            continue
        for defined_name in _defines(node):
            first = defined.setdefault(defined_name, path)
            if first != path:
                raise ValueError(f"{defined_name} is defined by both {first} and {path}")
        body.append(node)
    for inner in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(inner, ast.ImportFrom) and inner.level:
            raise ValueError(f"{path}: a relative import below the top level cannot be joined")
    return body


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
