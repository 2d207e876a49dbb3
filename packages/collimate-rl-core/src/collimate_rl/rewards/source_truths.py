"""Ground truths that datasets store as Python source, not JSON.

Several Hub datasets keep their tests as a source string in a column of its
own, and a user should be able to name that column as the ground truth
without writing glue:

* HumanEval (``openai_humaneval``'s ``test``): a module defining
  ``check(candidate)``, with the function's name in the ``entry_point``
  column;
* KodCode (``test``): a pytest module importing from ``solution``;
* a block of assert statements (MBPP's ``test_list`` joined, AceCoder), with
  the imports they need above them.

:func:`ground_truth_from_source` recognises these shapes by parsing the
source, never by running it.
"""

from __future__ import annotations

import ast
from typing import Any, Final

__all__ = ["ACCEPTED_SHAPES", "ground_truth_from_source"]

#: What a string ground truth may be, for error messages.
ACCEPTED_SHAPES: Final = (
    "a JSON document of a ground truth object or list; HumanEval's raw 'test' source "
    "defining check(candidate) (the function named by the row's entry_point); KodCode's "
    "raw 'test' source (pytest functions importing from solution); or assert statements, "
    "one per line"
)

_IMPORTS: Final = (ast.Import, ast.ImportFrom)


def _defines(tree: ast.Module, predicate: Any) -> bool:
    return any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and predicate(node.name)
        for node in tree.body
    )


def ground_truth_from_source(text: str) -> dict[str, Any] | None:
    """The ground-truth object a source string describes, or None when it is
    not Python or none of the shapes above.

    * defines ``check`` -> ``{"test": text}`` (the HumanEval check; the
      kind reads the entry point from the row);
    * defines ``test_*`` functions or ``Test*`` classes ->
      ``{"test": text}`` (a pytest module; KodCode imports ``solution``);
    * only imports and ``assert`` statements -> ``{"tests": [...],
      "setup": imports}`` (one test per statement).
    """
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    if not tree.body:
        return None
    if _defines(tree, lambda name: name == "check"):
        return {"test": text, "kind": "assert"}
    if _defines(tree, lambda name: name.startswith(("test", "Test"))):
        return {"test": text, "kind": "pytest"}
    asserts = [node for node in tree.body if isinstance(node, ast.Assert)]
    if asserts and all(isinstance(node, (ast.Assert, *_IMPORTS)) for node in tree.body):

        def source(node: ast.stmt) -> str:
            return (ast.get_source_segment(text, node) or "").strip()

        setup = "\n".join(source(n) for n in tree.body if isinstance(n, _IMPORTS))
        found: dict[str, Any] = {"tests": [source(n) for n in asserts], "kind": "assert"}
        if setup:
            found["setup"] = setup
        return found
    return None
