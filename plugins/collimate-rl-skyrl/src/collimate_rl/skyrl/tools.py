"""``CollimatePythonToolGroup``: skyrl-gym's ``python`` tool, run in a sandbox
whose interpreter keeps its state across one episode's calls.

skyrl-gym's own ``PythonCodeExecutorToolGroup`` runs every call as a fresh
``python -c`` on the training node itself: nothing a call defines survives
to the next, and the policy's code runs with the trainer's rights. This
group offers the same tool (``python(code) -> str``, so a model or an env
written for skyrl-gym's calls it unchanged) backed by core's
:class:`~collimate_rl.PythonTool`: one sandbox with one stateful
interpreter, started at the first call, so an episode that never calls the
tool costs nothing.

One group per env instance, i.e. per episode: skyrl-gym makes a new env per
rollout, and an env steps one call at a time, so the group's blocking tool
needs no lock. skyrl-gym has no ``close`` on a tool group; the env that owns
one calls :meth:`CollimatePythonToolGroup.close` when its episode ends.

What the model reads is core's :func:`~collimate_rl.cell_text`: output,
value, the cell's error with its traceback, a timeout. A failure of the
sandbox or the wire is not the model's: it raises
:class:`~collimate_rl.CollimateError` out of ``execute_tool``, for the env
to treat as an infrastructure failure.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, Final

from skyrl_gym.tools.core import ToolGroup, tool

from collimate_rl import CollimateError, PythonTool, SessionClient

__all__ = ["GROUP_NAME", "CollimatePythonToolGroup"]

#: The group's name (``tool_to_toolgroup`` maps ``python`` to it).
GROUP_NAME: Final = "CollimatePythonToolGroup"


class CollimatePythonToolGroup(ToolGroup):  # type: ignore[misc]
    """A skyrl-gym ``ToolGroup`` whose ``python`` tool runs in one sandbox
    kernel for the whole episode (see the module doc).

    ``client``: the client to use; or ``connect``: a function giving it at
    the first call (an env passes the process's shared client this way, so
    the group pickles as the env does); neither: the tool connects from the
    environment, as ``connect()`` does. ``template``: a python template;
    ``timeout``: seconds per call, past which the cell is interrupted and
    its names kept; ``seed``: the sandbox's exec seed (the episode's CRN seed).
    """

    def __init__(
        self,
        *,
        client: SessionClient | None = None,
        connect: Callable[[], SessionClient] | None = None,
        template: str = "py",
        timeout: float = 30.0,
        seed: str | None = None,
    ) -> None:
        self.template = template
        self.timeout = timeout
        self.seed = seed
        self._client = client
        self._connect = connect
        self._tool: PythonTool | None = None
        self._closed = False
        super().__init__(name=GROUP_NAME)

    @tool  # type: ignore[untyped-decorator]  # skyrl-gym ships no types
    def python(self, code: str) -> str:
        """Run ``code`` as the episode's next cell; what the model reads back."""
        return self.python_tool.call(code)

    @property
    def python_tool(self) -> PythonTool:
        """The episode's :class:`~collimate_rl.PythonTool` (made at first use;
        its sandbox starts at the first call)."""
        if self._closed:
            raise RuntimeError("this tool group is closed: its episode has ended")
        if self._tool is None:
            client = self._client
            if client is None and self._connect is not None:
                client = self._connect()
            self._tool = PythonTool(
                client=client, template=self.template, timeout=self.timeout, seed=self.seed
            )
        return self._tool

    @property
    def calls(self) -> int:
        """Calls made so far."""
        return 0 if self._tool is None else self._tool.calls

    def close(self) -> None:
        """Stop the interpreter and reap the sandbox (idempotent). A backend
        that cannot be reached reaps idle sandboxes itself: closing never
        fails an episode."""
        self._closed = True
        tool, self._tool = self._tool, None
        if tool is not None:
            with contextlib.suppress(CollimateError):
                tool.close()

    # An env is pickled as SkyRL ships work to a Ray worker: the group goes
    # as its settings; skyrl-gym's registry of bound tools is rebuilt there.
    def __getstate__(self) -> dict[str, Any]:
        if self._tool is not None and self._tool.started:
            raise TypeError(
                "a started Python tool does not pickle: its interpreter's state "
                "lives in this process's sandbox"
            )
        state = {k: v for k, v in self.__dict__.items() if k != "_tool_registry"}
        state["_tool"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._tool_registry: dict[str, Callable[..., Any]] = {}
        self._register_tools()
