"""A plain Python tool for ``GRPOTrainer(tools=[...])``.

TRL calls a ``tools=`` callable with the arguments the model wrote and
turns its signature and Google-style docstring into the tool's schema
(transformers' ``get_json_schema``): the docstring is written for the
model. The same function serves every rollout of the run and TRL tells it
nothing about which rollout is calling, so no state can be kept per
rollout: each call runs in a fresh sandbox and interpreter, closed when
the call returns. For an interpreter that keeps its names across one
rollout's calls, use :class:`~collimate_rl.trl.PythonEnvironment` as the
``environment_factory``.

A failure of the sandbox or the wire raises
:class:`~collimate_rl.CollimateError`: TRL shows its message to the model
(``{"error": ...}``) and counts a tool failure. Nothing rollout-wide can
remember it here (the environment does: its rollout is then left out).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from collimate_rl import PythonTool
from collimate_rl.python_tool import DEFAULT_TOOL_TEXT_LIMIT

from .clients import process_client

__all__ = ["python", "python_tool"]

#: What the model reads about the tool (TRL builds the schema from it).
_DOC = """Run Python code in a fresh interpreter and return what it printed.

Nothing is kept between calls: each call must define everything it uses.
The result shows stdout, stderr, the value of the last expression, and the
error with its traceback if the code raised.

Args:
    code: The complete Python source code to run.

Returns:
    The output of the code, as text.
"""


def python_tool(
    *,
    client: Any = None,
    base_url: str | None = None,
    unix_socket: str | None = None,
    api_key: str | None = None,
    template: str = "py",
    timeout: float = 30.0,
    text_limit: int = DEFAULT_TOOL_TEXT_LIMIT,
) -> Callable[[str], str]:
    """A ``python(code: str) -> str`` tool for ``GRPOTrainer(tools=[...])``
    running each call in a fresh sandbox of ``template`` at the given target
    (``client``, else ``base_url`` / ``unix_socket`` / ``api_key``, else
    what :func:`collimate_rl.connect` finds in the environment).
    ``timeout``: seconds one call may run; ``text_limit``: characters of
    the result the model reads back."""
    target = (base_url, unix_socket, api_key)

    def python(code: str) -> str:
        with PythonTool(
            client=client if client is not None else process_client(target),
            template=template,
            timeout=timeout,
            text_limit=text_limit,
        ) as tool:
            return tool.call(code)

    python.__doc__ = _DOC
    python.__qualname__ = "python"
    python.__module__ = __name__
    return python


#: The tool with the defaults: the target from the environment, template ``py``.
python = python_tool()
