"""``AsyncKernel``: a stateful Python interpreter in a sandbox.

One of a pair of twins: the async module is written by hand, its blocking
twin generated from it by ``tools/unasync.py`` (edit the async one, then
``hatch run lint:unasync``). The public module is ``collimate_rl.kernel``;
what both twins share is ``collimate_rl.kernel._state``.

A kernel lives in a sandbox but never imports the sandbox (the sandbox makes
kernels: it is the layer above). What it needs of its host is declared here,
:class:`AsyncKernelHost`, and the sandbox implements it.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Protocol

from ..errors import CollimateError, CollimateTaskError
from ..seeds import group_seeds
from ._state import (
    INLINE_CELL_LIMIT,
    CellResult,
    KernelPlan,
    LostKernel,
    check_setup,
    parse_forks,
    probe_answer,
    read_cell,
)

__all__ = ["AsyncKernel", "AsyncKernelHost"]


class AsyncKernelHost(Protocol):
    """What a kernel needs of the sandbox it lives in: the clone it is in
    (``session_id``, ``started``), one exec of a command or of code in it
    (``_run`` / ``_run_code``: core's own, not the sandbox's public surface),
    a byte-exact upload, and a fresh clone of the same template (``reset``).
    :class:`~collimate_rl.AsyncSandbox` is one."""

    session_id: str | None

    @property
    def started(self) -> bool: ...

    async def _run(self, command: str, timeout_seconds: int | None) -> dict[str, Any]: ...

    async def _run_code(self, code: str, timeout_seconds: int | None) -> dict[str, Any]: ...

    async def upload_bytes(
        self, path: str, data: bytes, *, timeout_seconds: int | None = None
    ) -> None: ...

    async def reset(self) -> object: ...


class AsyncKernel:
    """A Python interpreter that lives in ``sandbox`` between cells.

    Made by :meth:`AsyncSandbox.kernel <collimate_rl.AsyncSandbox.kernel>`;
    started on first use (or on entering its ``async with`` block). Each
    :meth:`run` is one session exec: names, imports and data persist from
    cell to cell, as in a notebook. A cell past its timeout is interrupted
    (``KeyboardInterrupt``) and the state kept; one that ignores the
    interrupt, or kills the interpreter, costs a restart, and its result
    says so.

    Whatever a cell does is in a :class:`~collimate_rl.CellResult`, never
    an exception: a model's tool call that raised would drop its sample as
    an infrastructure failure, so a policy could learn to hide its failures
    that way. A cell that breaks the kernel beyond what the interpreter's
    own restart mends (it deleted the kernel's files, killed its helper
    processes, filled the sandbox's disk or process cap) gets the kernel
    made anew in its directory, or, failing that, in a fresh sandbox
    (:meth:`AsyncSandbox.reset <collimate_rl.AsyncSandbox.reset>`: the
    sandbox's files and other kernels are gone too); its result says
    ``restarted`` and why (``note``). Only what no cell can cause raises
    :class:`~collimate_rl.CollimateError`: the sandbox gone or the wire
    failing, or a fresh sandbox in which no kernel starts.
    """

    def __init__(
        self,
        sandbox: AsyncKernelHost,
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
        # why the next result says ``restarted`` (the kernel was made anew
        # outside a cell: a fork that found it lost)
        self._pending_note: str | None = None

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
        outcome = await self._attempt(payload, seconds)
        if isinstance(outcome, LostKernel):
            outcome = await self._recovered(outcome, payload, seconds)
        note, self._pending_note = self._pending_note, None
        if note is not None:
            return dataclasses.replace(outcome, restarted=True, note=outcome.note or note)
        return dataclasses.replace(outcome, restarted=True) if lost else outcome

    async def _attempt(self, payload: str, seconds: float) -> CellResult | LostKernel:
        """One try at the cell: its result, or the kernel lost."""
        exec_timeout = self._plan.exec_timeout(seconds)
        inline = len(payload) <= INLINE_CELL_LIMIT
        if self._must_install():
            if inline:
                # the first cell rides with the install: one exec, one interpreter
                # fewer (an answer line means the kernel started)
                command = self._plan.install_command(first_cell=payload)
                response = await self.sandbox._run(command, exec_timeout + 60)
                self._installed_here()
                return read_cell(response)
            response = await self.sandbox._run(self._plan.install_command(), 60)
            self._installed_here()
            if response.get("exit_code") != 0:
                return LostKernel("the interpreter did not start", ran=False)
        if not inline:
            path = self._plan.cell_file()
            try:
                await self.sandbox.upload_bytes(path, payload.encode())
            except CollimateTaskError as exc:  # refused in the guest: its disk full, say
                return LostKernel(f"the cell could not be written into the sandbox: {exc}", False)
            command = self._plan.run_command(path, from_file=True)
            return read_cell(await self.sandbox._run(command, exec_timeout))
        if await self._code_reaches_kernel():
            code = self._plan.run_code(payload)
            return read_cell(await self.sandbox._run_code(code, exec_timeout))
        command = self._plan.run_command(payload, from_file=False)
        return read_cell(await self.sandbox._run(command, exec_timeout))

    async def _recovered(self, lost: LostKernel, payload: str, seconds: float) -> CellResult:
        """The cell's result after its kernel was lost: the kernel made anew
        (in place, else in a fresh sandbox), and the cell run there when it
        had not run yet (once: a cell that loses the new kernel too is
        reported, not sent again)."""
        how = ""
        for fresh_sandbox in (False, True):
            made = await self._remade(fresh_sandbox=fresh_sandbox)
            if made is None:
                continue
            how = made
            if lost.ran:
                break
            again = await self._attempt(payload, seconds)
            if isinstance(again, CellResult):
                note = f"{lost.why}; {how}" + (f"; {again.note}" if again.note else "")
                return dataclasses.replace(again, restarted=True, note=note)
            lost = again
        return lost.cell_result(how)

    async def _remade(self, *, fresh_sandbox: bool) -> str | None:
        """Make the kernel anew: in its directory (None when that fails:
        the cell left the sandbox unable to start one), or, with
        ``fresh_sandbox``, in a fresh clone of the sandbox's template, where
        a failure is no cell's doing and raises. Says what was done."""
        self._code_runner = None
        if fresh_sandbox:
            await self.sandbox.reset()
        command = self._plan.reinstall_command(self.seed)
        response = await self.sandbox._run(command, 60)
        if fresh_sandbox:
            check_setup(response, "start in a fresh sandbox")
        elif response.get("exit_code") != 0:
            return None
        self._installed_here()
        if fresh_sandbox:
            return "the sandbox was replaced by a fresh one (its files are gone)"
        return "a fresh interpreter was started"

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

        A kernel that its cells left unable to fork (dead, its files gone,
        the sandbox's process cap full) is made anew, as :meth:`run` does,
        and forked then: the forks start empty, and the next result of each
        (and of this kernel) says ``restarted`` and why.
        """
        if n < 1:
            raise ValueError(f"n must be at least 1, not {n!r}")
        if self.seed is not None:
            raise RuntimeError("a fork cannot be forked again (its confinement keeps it from it)")
        seeds = group_seeds(n, seed_mode, base_seed)
        await self.start()
        forks, failure = await self._fork_once(seeds)
        for fresh_sandbox in (False, True):
            if forks is not None:
                return forks
            made = await self._remade(fresh_sandbox=fresh_sandbox)
            if made is None:
                continue
            note = f"the interpreter could not be forked ({failure}); {made}"
            self._pending_note = note
            forks, failure = await self._fork_once(seeds)
            for fork in forks or []:
                fork._pending_note = note
        if forks is None:
            raise CollimateError(f"a kernel fork failed in a fresh sandbox: {failure}")
        return forks

    async def _fork_once(
        self, seeds: list[str | None]
    ) -> tuple[list[AsyncKernel] | None, str | None]:
        """The forks, or None and why not (every fork made is closed then)."""
        plans = [self._plan.sibling() for _ in seeds]
        response = await self.sandbox._run(self._plan.fork_command(plans, seeds), 180)
        try:
            check_setup(response, "fork")
            reports = parse_forks(response, len(plans))
        except CollimateError as exc:
            return None, str(exc)
        forks = []
        for plan, report in zip(plans, reports, strict=True):
            fork = type(self)(self.sandbox)
            fork._plan = plan
            fork._installed = bool(report.get("ok"))
            fork._session = self.sandbox.session_id
            fork.seed = report.get("seed")
            fork.isolation = report.get("isolation")
            forks.append(fork)
        failed = next((r for r in reports if not r.get("ok")), None)
        if failed is None:
            return forks, None
        for fork in forks:
            await fork.close()
        return None, f"a kernel fork failed: {failed.get('error')!r}"

    async def restart(self) -> None:
        """A fresh interpreter: every name of the old one is gone. A kernel
        its cells broke beyond a restart is made anew, as :meth:`run` does."""
        if not self._installed or self._session != self.sandbox.session_id:
            await self.start()
            return
        response = await self.sandbox._run(self._plan.restart_command(), 60)
        if response.get("exit_code") != 0 and await self._remade(fresh_sandbox=False) is None:
            await self._remade(fresh_sandbox=True)

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

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "running" if self._installed else "not started"
        return f"{type(self).__name__}({self.sandbox!r}, {state})"
