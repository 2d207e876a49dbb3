"""A notebook cell, compiled as Jupyter runs one: its statements, then its
trailing expression evaluated apart so its value can be displayed. Shared
by the kernel (``kernel_program.py``) and SandboxFusion's ``/run_jupyter``
(``jupyter_runner.py``), each carrying this module joined into it.
"""

# Sent as source to a bare interpreter: standard library only.
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # never at run time: the guest interpreter imports no typing
    from typing import Any


def compile_cell(code: str, filename: str) -> tuple[Any, Any]:
    """``code`` as (its statements, its trailing expression or None), both
    compiled under ``filename``, which tracebacks show with the cell's
    lines (registered in ``linecache``)."""
    import ast
    import linecache

    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    tree = ast.parse(code, filename, "exec")
    last = None
    trailing = tree.body[-1] if tree.body else None
    if isinstance(trailing, ast.Expr):
        tree.body.pop()
        last = compile(ast.Expression(trailing.value), filename, "eval")
    return compile(tree, filename, "exec"), last
