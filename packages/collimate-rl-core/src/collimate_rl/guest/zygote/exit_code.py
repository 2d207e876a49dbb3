"""The exit status ``python`` gives an exception that ends a program.

Shared by the exec child (a python exec's code) and the SandboxFusion
runner (``sandbox_fusion_runner.py``, which carries this module joined
into it). Running the code stays in each: a helper frame between the code
and its caller would cost the code one level of recursion (see
``exec_child.run_python``); only what its exception means is read here.
"""

from __future__ import annotations

import contextlib
import sys
import traceback


def exit_code_of(exc: SystemExit) -> int:
    """Its code as a byte, 0 for None, else 1 after writing the code to
    stderr (as the interpreter does)."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    with contextlib.suppress(BaseException):
        sys.stderr.write(f"{exc.code}\n")
    return 1


def exit_status(exc: BaseException) -> int:
    """The status a program ``exc`` ended exits with: a ``SystemExit``'s
    (:func:`exit_code_of`), else 1 after printing the traceback as the
    interpreter does, without the frame that ran the program."""
    if isinstance(exc, SystemExit):
        return exit_code_of(exc)
    tb = exc.__traceback__
    traceback.print_exception(type(exc), exc, tb.tb_next if tb is not None else None)
    return 1
