"""``AsyncKernel``: a stateful Python interpreter in a sandbox.

One of a pair of twins: the async module is written by hand, its blocking
twin generated from it by ``tools/unasync.py`` (edit the async one, then
``hatch run lint:unasync``). The public module is ``collimate_rl.kernel``;
what both twins share is ``collimate_rl._kernel_state``.
"""

from __future__ import annotations

import contextlib
import dataclasses
from types import TracebackType
from typing import TYPE_CHECKING

from .._kernel_state import (
    INLINE_CELL_LIMIT,
    CellResult,
    KernelPlan,
    check_setup,
    parse_cell,
    parse_forks,
    probe_answer,
)
from ..errors import CollimateError
from ..seeds import group_seeds

if TYPE_CHECKING:
    from .sandbox import AsyncSandbox

__all__ = ["AsyncKernel"]


class AsyncKernel:
    """A Python interpreter that lives in ``sandbox`` between cells.

    Made by :meth:`AsyncSandbox.kernel <collimate_rl.AsyncSandbox.kernel>`;
    started on first use (or on entering its ``async with`` block). Each
    :meth:`run` is one session exec: names, imports and data persist from
    cell to cell, as in a notebook. A cell past its timeout is interrupted
    (``KeyboardInterrupt``) and the state kept; one that ignores the
    interrupt, or kills the interpreter, costs a restart, and its result
    says so. Failures of the sandbox or the wire raise
    :class:`~collimate_rl.CollimateError`; whatever the cell does is in the
    :class:`~collimate_rl.CellResult`.
    """

    def __init__(
        self,
        sandbox: AsyncSandbox,
        *,
        timeout: float = 30.0,
        output_limit: int = 64 * 1024,
        python: str = "python3",
    ) -> None:
        self.sandbox = sandbox
        self._plan = KernelPlan(python=python, timeout=timeout, output_limit=output_limit)
        self._installed = False
        self._closed = False
        self._session: str | None = None  # the clone the kernel lives in
        # (the clone, whether a code exec reaches the kernel there)
        self._code_runner: tuple[str | None, bool] | None = None
        #: a fork's seed (``COLLIMATE_SEED`` in its environment), else None
        self.seed: str | None = None
        #: a fork's confinement, as the fork applied it ("none: why" without)
        self.isolation: str | None = None

    @property
    def directory(self) -> str:
        """The kernel's private directory in the guest (its socket, program)."""
        return self._plan.directory

    async def start(self) -> AsyncKernel:
        """Install the kernel in the sandbox and start it (no-op when done)."""
        if self._must_install():
            response = await self.sandbox._run(self._plan.install_command(), 60)
            check_setup(response, "start")
            self._installed_here()
        return self

    def _must_install(self) -> bool:
        if self._closed:
            raise RuntimeError("this kernel is closed; make another with sandbox.kernel()")
        if self._installed and self._session != self.sandbox.session_id:
            self._installed = False  # the sandbox was reset (or closed): a new clone
        return not self._installed

    def _installed_here(self) -> None:
        self._installed = True
        self._session = self.sandbox.session_id

    async def run(self, code: str, *, timeout: float | None = None) -> CellResult:
        """Run one cell; ``timeout`` (seconds) defaults to the kernel's. A
        kernel whose sandbox was reset since its last cell starts afresh in
        the new clone, and the result says ``restarted``. One cell at a
        time: the kernel is one interpreter, so do not overlap ``run``
        calls on it (a sandbox can hold several kernels)."""
        lost = self._installed and self._session != self.sandbox.session_id
        payload, seconds = self._plan.cell_payload(code, timeout)
        exec_timeout = self._plan.exec_timeout(seconds)
        if self._must_install() and len(payload) <= INLINE_CELL_LIMIT:
            # the first cell rides with the install: one exec, one interpreter
            # fewer (an answer line means the kernel started)
            response = await self.sandbox._run(
                self._plan.install_command(first_cell=payload), exec_timeout + 60
            )
            result = parse_cell(response)
            self._installed_here()
            return dataclasses.replace(result, restarted=True) if lost else result
        await self.start()
        from_file = len(payload) > INLINE_CELL_LIMIT
        if from_file:
            path = self._plan.cell_file()
            await self.sandbox.upload_bytes(path, payload.encode())
            payload = path
        if not from_file and await self._code_reaches_kernel():
            response = await self.sandbox._run_code(self._plan.run_code(payload), exec_timeout)
        else:
            command = self._plan.run_command(payload, from_file=from_file)
            response = await self.sandbox._run(command, exec_timeout)
        result = parse_cell(response)
        return dataclasses.replace(result, restarted=True) if lost else result

    async def _code_reaches_kernel(self) -> bool:
        """Whether a cell's runner can be a code exec: the template's own
        interpreter is Python and reaches the kernel. A code exec is forked
        from the server's warm interpreter, a command starts a fresh one
        (about three times the cost of a cell here). Asked until the answer
        is sure, once per clone: a template whose code is not Python (a
        shell) keeps the command; a kernel that did not answer (it died,
        the command's runner restarts it) is asked about again next cell."""
        session = self.sandbox.session_id
        if self._code_runner is None or self._code_runner[0] != session:
            probe = await self.sandbox._run_code(self._plan.probe_code(), 30)
            answer = probe_answer(probe)
            if answer is not False:
                self._code_runner = (session, bool(answer))
            return bool(answer)
        return self._code_runner[1]

    async def fork(
        self, n: int, *, seed_mode: str = "crn", base_seed: str | None = None
    ) -> list[AsyncKernel]:
        """``n`` kernels holding this one's live state as it is now (names,
        imported modules, loaded data), each a fork(2) of its interpreter:
        the memory is shared copy-on-write, nothing is run again. Seeds are
        :func:`~collimate_rl.group_seeds`'s for ``seed_mode`` (each fork's
        ``random``, numpy's global generator if imported, and
        ``COLLIMATE_SEED``; a ``"vanilla"`` fork draws its own), in
        :attr:`seed`. Each fork is confined where the sandbox's kernel has
        Landlock (:attr:`isolation` says how, or why not): its own working
        directory, the system read-only, no TCP, and no signal, socket or
        ``/proc`` access to the parent or to the other forks (see the threat
        model). Its files go in its working directory,
        :attr:`directory` ``/work`` (also its ``HOME`` and ``TMPDIR``). The
        forks live in this sandbox; close each (or the sandbox). A fork
        cannot be forked again.
        """
        if n < 1:
            raise ValueError(f"n must be at least 1, not {n!r}")
        if self.seed is not None:
            raise RuntimeError("a fork cannot be forked again (its confinement keeps it from it)")
        seeds = group_seeds(n, seed_mode, base_seed)
        await self.start()
        plans = [self._plan.sibling() for _ in range(n)]
        response = await self.sandbox._run(self._plan.fork_command(plans, seeds), 180)
        check_setup(response, "fork")
        forks = []
        for plan, report in zip(plans, parse_forks(response, n), strict=True):
            fork = type(self)(self.sandbox)
            fork._plan = plan
            fork._installed = bool(report.get("ok"))
            fork._session = self.sandbox.session_id
            fork.seed = report.get("seed")
            fork.isolation = report.get("isolation")
            forks.append(fork)
        failed = next((r for r in parse_forks(response, n) if not r.get("ok")), None)
        if failed is not None:
            for fork in forks:
                await fork.close()
            raise CollimateError(f"a kernel fork failed: {failed.get('error')!r}")
        return forks

    async def restart(self) -> None:
        """A fresh interpreter: every name of the old one is gone."""
        if not self._installed or self._session != self.sandbox.session_id:
            await self.start()
            return
        check_setup(await self.sandbox._run(self._plan.restart_command(), 60), "restart")

    async def close(self) -> None:
        """Stop the interpreter and remove its directory (idempotent; a
        sandbox already gone is fine)."""
        installed, self._installed = self._installed, False
        self._closed = True
        if installed and self.sandbox.started and self._session == self.sandbox.session_id:
            with contextlib.suppress(CollimateError):
                await self.sandbox._run(self._plan.stop_command(), 30)

    async def __aenter__(self) -> AsyncKernel:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "running" if self._installed else "not started"
        return f"{type(self).__name__}({self.sandbox!r}, {state})"
