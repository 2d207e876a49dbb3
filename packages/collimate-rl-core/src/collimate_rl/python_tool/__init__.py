"""PythonTool: the Python tool of one multi-turn trajectory (ReTool / ToRL
style), shared by the framework adapters.

A :class:`PythonTool` (:class:`AsyncPythonTool`) is a sandbox with one
stateful interpreter (:meth:`Sandbox.kernel <collimate_rl.Sandbox.kernel>`),
started on the first call; :func:`cell_text` is how a cell's outcome reads to
the model. verl's ``BaseTool``, skyrl-gym's ``ToolGroup`` and TRL's
environments (in their plugins) are thin shapes over it.
"""

from __future__ import annotations

from ._async import AsyncPythonTool
from ._sync import PythonTool
from ._text import DEFAULT_TOOL_TEXT_LIMIT, cell_text

__all__ = ["DEFAULT_TOOL_TEXT_LIMIT", "AsyncPythonTool", "PythonTool", "cell_text"]

# Their public home: reprs, docs and pickles name this module.
for _public in (AsyncPythonTool, PythonTool, cell_text):
    _public.__module__ = __name__
del _public
