"""``AsyncPythonTool``: the Python tool of one agent trajectory.

One of a pair of twins: the async module is written by hand, its blocking
twin generated from it by ``tools/unasync.py``. The public module is
``collimate_rl.python_tool``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..kernel._state import CellResult
from ..sandbox._async import AsyncSandbox
from ._text import DEFAULT_TOOL_TEXT_LIMIT, cell_text

if TYPE_CHECKING:
    from ..kernel._async import AsyncKernel
    from ..transport._async import AsyncSessionClient

__all__ = ["AsyncPythonTool"]


class AsyncPythonTool:
    """A sandbox with one stateful interpreter, for the calls of one
    trajectory: what a model defines in one call, the next call sees.

    The framework adapters (verl, skyrl-gym, TRL) hold one per trajectory
    and close it when the trajectory ends. Nothing starts until the first
    :meth:`call`, so a trajectory that never uses the tool costs nothing.
    :meth:`call` answers the text the model reads (:func:`cell_text`);
    :meth:`run` the full :class:`~collimate_rl.CellResult`. Whatever the
    code does is in the answer; a failure of the sandbox or the wire raises
    :class:`~collimate_rl.CollimateError`, for the adapter to keep apart
    from the policy's mistakes (the sample is dropped, never scored 0.0).

    ``client`` is shared by the tools of a process (one pool of
    connections); without one each tool connects from the environment.
    ``seed`` is the sandbox's default exec seed (common random numbers
    across a group).
    """

    def __init__(
        self,
        *,
        client: AsyncSessionClient | None = None,
        template: str = "py",
        timeout: float = 30.0,
        output_limit: int = 64 * 1024,
        text_limit: int = DEFAULT_TOOL_TEXT_LIMIT,
        seed: str | None = None,
    ) -> None:
        self.template = template
        self.timeout = timeout
        self.output_limit = output_limit
        self.text_limit = text_limit
        self.seed = seed
        self.calls = 0
        #: ``time.monotonic()`` of the last call's end (or of creation)
        self.last_used = time.monotonic()
        self._client = client
        self._sandbox: AsyncSandbox | None = None
        self._kernel: AsyncKernel | None = None
        self._closed = False

    @property
    def started(self) -> bool:
        """A sandbox is live for this tool."""
        return self._sandbox is not None

    async def _live_kernel(self) -> AsyncKernel:
        if self._closed:
            raise RuntimeError("this Python tool is closed")
        if self._kernel is None:
            sandbox = AsyncSandbox(self.template, client=self._client, default_seed=self.seed)
            self._sandbox = sandbox
            await sandbox.start()
            kernel = sandbox.kernel(timeout=self.timeout, output_limit=self.output_limit)
            await kernel.start()
            self._kernel = kernel
        return self._kernel

    async def run(self, code: str, *, timeout: float | None = None) -> CellResult:
        """Run ``code`` as the next cell of this trajectory's interpreter."""
        kernel = await self._live_kernel()
        try:
            return await kernel.run(code, timeout=timeout)
        finally:
            self.calls += 1
            self.last_used = time.monotonic()

    async def call(self, code: str, *, timeout: float | None = None) -> str:
        """Run ``code`` and answer what the model reads back."""
        return cell_text(await self.run(code, timeout=timeout), limit=self.text_limit)

    async def close(self) -> None:
        """Stop the interpreter and reap the sandbox (idempotent)."""
        self._closed = True
        kernel, self._kernel = self._kernel, None
        sandbox, self._sandbox = self._sandbox, None
        try:
            if kernel is not None:
                await kernel.close()
        finally:
            if sandbox is not None:
                await sandbox.close()

    async def __aenter__(self) -> AsyncPythonTool:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "live" if self.started else "not started"
        return f"{type(self).__name__}({self.template!r}, {state}, calls={self.calls})"
