"""Assembling the in-guest grader program: runtime + a config literal.

The runtime (:mod:`.guest_runtime`) is read once as text and shrunk: its
docstrings, annotations and ``__future__`` import are dropped (a locked-down
guest may be unable to import anything its warm interpreter did not
preload), and each reward kind ships only the functions it reaches.

Compiling the ~9 KB runtime costs a guest ~5 ms per grade, more than the
rest of a grade together; tokenizing its marshalled bytecode as one hex
string and loading it costs ~0.3 ms (hex tokenizes 2.5x faster than a bytes
literal's escapes). So the program carries both: the guest loads the
bytecode when its bytecode magic number is the one that wrote it, and
compiles the source otherwise (a string literal is cheap to carry and only
compiled when needed).

The config is a Python literal (not JSON) so the guest needs no ``json``
import; non-finite floats are spelled ``float('inf')`` / ``float('nan')``.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import marshal
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["guest_program", "py_literal", "runtime_source"]

_RUNTIME_FILE = Path(__file__).with_name("guest_runtime.py")
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


class _Shrink(ast.NodeTransformer):
    """Drops what only serves readers and type checkers: docstrings,
    annotations and ``from __future__`` imports (same behaviour)."""

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.AST | None:
        return None if node.module == "__future__" else node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.annotation = None
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST | None:
        if node.value is None:
            return None
        return ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)

    def _body(self, node: Any) -> Any:
        body = node.body
        if (
            body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            del body[0]
        self.generic_visit(node)
        if not node.body:
            node.body = [ast.Pass()]
        return node

    def visit_Module(self, node: ast.Module) -> Any:
        return self._body(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> Any:
        return self._body(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> Any:
        node.returns = None
        return self._body(node)


def _tree_shake(tree: ast.Module, roots: set[str]) -> ast.Module:
    """Keep the top-level functions and classes reachable from ``roots``
    (and every import and assignment)."""
    defs = {node.name: node for node in tree.body if isinstance(node, _DEFS)}
    keep: set[str] = set()
    todo = [r for r in roots if r in defs]
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep.add(name)
        used = {n.id for n in ast.walk(defs[name]) if isinstance(n, ast.Name)}
        todo.extend(n for n in used if n in defs and n not in keep)
    tree.body = [n for n in tree.body if not isinstance(n, _DEFS) or n.name in keep]
    return tree


@functools.cache
def runtime_source(kind: str | None = None) -> str:
    """The shipped runtime: shrunk, and for a ``kind`` only the code that
    kind reaches (``main`` dispatches to ``_grade_<kind>`` by name)."""
    tree = _Shrink().visit(ast.parse(_RUNTIME_FILE.read_text(encoding="utf-8")))
    if kind is not None:
        tree = _tree_shake(tree, {"main", f"_grade_{kind}"})
    return ast.unparse(ast.fix_missing_locations(tree))


_BOOT = """import sys, marshal
def _boot():
    ext = sys.modules.get('_frozen_importlib_external')
    if sys.implementation.name == 'cpython' and getattr(ext, 'MAGIC_NUMBER', None) == M:
        try:
            return marshal.loads(B)
        except Exception:
            pass
    return compile(S, '<collimate-grader>', 'exec')
exec(_boot())
del S, B, M
"""


@functools.cache
def _runtime_block(kind: str, bytecode: bool) -> str:
    source = runtime_source(kind)
    if not bytecode:
        return source + "\n"
    payload = marshal.dumps(compile(source, "<collimate-grader>", "exec"))
    return (
        f"S = {source!r}\nB = bytes.fromhex({payload.hex()!r})\n"
        f"M = {importlib.util.MAGIC_NUMBER!r}\n{_BOOT}"
    )


def py_literal(value: Any) -> str:
    """``value`` (JSON-like data) as Python source that evaluates back to it."""
    if value is None or isinstance(value, (bool, int, str, bytes)):
        return repr(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "float('nan')"
        if math.isinf(value):
            return "float('inf')" if value > 0 else "float('-inf')"
        return repr(value)
    if isinstance(value, Mapping):
        items = ", ".join(f"{py_literal(k)}: {py_literal(v)}" for k, v in value.items())
        return "{" + items + "}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(py_literal(v) for v in value)
        if isinstance(value, tuple):
            return "(" + inner + ("," if len(value) == 1 else "") + ")"
        return "[" + inner + "]"
    raise TypeError(
        f"grader data must be JSON-like (None, bool, int, float, str, list, dict), "
        f"got {type(value).__name__}: {value!r:.80}"
    )


def guest_program(config: Mapping[str, Any], *, bytecode: bool = True) -> str:
    """The complete program: the runtime for ``config["kind"]``, then
    ``main(<config>)``. ``bytecode=False`` ships source only."""
    return f"{_runtime_block(str(config['kind']), bytecode)}main({py_literal(config)})\n"
