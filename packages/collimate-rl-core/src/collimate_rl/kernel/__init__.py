"""Kernel: a stateful Python interpreter inside a sandbox, for multi-turn
tool use (a model writes code, reads the result, writes more: ReTool and
ToRL style).

``sandbox.kernel()`` gives a :class:`Kernel` (:class:`AsyncKernel` for an
:class:`~collimate_rl.AsyncSandbox`); :meth:`Kernel.run` runs one cell and
answers a :class:`CellResult`. It needs nothing of the server beyond the
session surface: the interpreter is a background process of the session,
reached over a unix socket in a private directory by one exec per cell, so
it works over both wires (daemon and gateway) alike.
"""

from __future__ import annotations

from ._async import AsyncKernel
from ._state import CellError, CellResult
from ._sync import Kernel

__all__ = ["AsyncKernel", "CellError", "CellResult", "Kernel"]

# Their public home: reprs, docs and pickles name this module.
for _public in (AsyncKernel, CellError, CellResult, Kernel):
    _public.__module__ = __name__
del _public
