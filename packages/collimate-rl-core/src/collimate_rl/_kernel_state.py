"""What both kernels share: :class:`CellResult`, :class:`CellError`, the
guest commands a kernel sends, and reading the runner's answer.

``AsyncKernel`` is written in ``collimate_rl/_async/kernel.py``, ``Kernel``
generated from it; the public module is ``collimate_rl.kernel``; the program
that runs in the guest is ``collimate_rl/_kernel_program.py``.
"""

from __future__ import annotations

import base64
import json
import math
import secrets
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import CollimateError

__all__ = ["PROBE_MARK", "CellError", "CellResult", "KernelPlan", "probe_answer"]

#: the guest program, copied into the sandbox once per kernel
PROGRAM = (Path(__file__).parent / "_kernel_program.py").read_bytes()
#: the line the runner prints its answer on (the exec's output is merged)
RESULT_PREFIX = "@@collimate-kernel-result@@ "
#: how a guest command runs the program: imported from its directory (so
#: its bytecode is cached there), ``main`` given the command line
RUNNER = "import sys; sys.path[:0] = sys.argv[1:2]; import kernel; kernel.main(sys.argv[1:])"
#: the install command's program: write the kernel's program into its
#: directory, then run its ``start`` (or ``start-run``) as :data:`RUNNER` would
INSTALLER = (
    "import binascii, sys; d = sys.argv[1]; "
    "open(d + '/kernel.py', 'wb').write(binascii.a2b_base64(sys.argv[2])); "
    "sys.path[:0] = [d]; import kernel; kernel.main([d, *sys.argv[3:]])"
)
#: what the probe prints (then ``yes`` or ``no``) where a code exec runs Python
PROBE_MARK = "@@collimate-kernel-reachable@@"
#: a cell this big (encoded) travels as a file rather than in the command line
INLINE_CELL_LIMIT = 64 * 1024
#: seconds the exec gets beyond the cell's timeout: the interrupt's grace,
#: a second interrupt, killing and starting a kernel
EXEC_MARGIN_S = 30


@dataclass(frozen=True)
class CellError:
    """A cell's exception: its type name, message and traceback, the
    traceback holding the cell's frames only (``<cell N>``, then whatever
    library code they called), none of the kernel's."""

    type: str
    message: str
    traceback: str

    def __str__(self) -> str:
        return f"{self.type}: {self.message}" if self.message else self.type


@dataclass(frozen=True)
class CellResult:
    """One cell's outcome.

    ``value`` is the ``repr`` of the cell's trailing expression, as a REPL
    shows it (``None`` when the cell ends in a statement or the expression
    is ``None``). ``error`` is set when the cell raised (``SystemExit`` too),
    when it ``timed_out`` (``KeyboardInterrupt``: the interrupt landed, the
    state is kept), or when the kernel was ``restarted`` under it (it ignored
    the interrupt, or died: the state is gone). ``truncated`` says stdout,
    stderr or the value hit the kernel's ``output_limit``.
    """

    stdout: str
    stderr: str
    value: str | None
    error: CellError | None
    duration_s: float
    timed_out: bool = False
    restarted: bool = False
    truncated: bool = False
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        """The cell ran to its end without an exception."""
        return self.error is None

    @classmethod
    def from_answer(cls, answer: dict[str, Any]) -> CellResult:
        error = answer.get("error")
        return cls(
            stdout=str(answer.get("stdout") or ""),
            stderr=str(answer.get("stderr") or ""),
            value=None if answer.get("value") is None else str(answer["value"]),
            error=None
            if not isinstance(error, dict)
            else CellError(
                type=str(error.get("type") or ""),
                message=str(error.get("message") or ""),
                traceback=str(error.get("traceback") or ""),
            ),
            duration_s=float(answer.get("duration_s") or 0.0),
            timed_out=bool(answer.get("timed_out")),
            restarted=bool(answer.get("restarted")),
            truncated=bool(answer.get("truncated")),
            raw=answer,
        )


class KernelPlan:
    """The guest commands of one kernel: where it lives (a fresh private
    directory under ``/tmp``), how it is installed, started, run and stopped."""

    def __init__(self, *, python: str, timeout: float, output_limit: int) -> None:
        if not (timeout > 0 and math.isfinite(timeout)):
            raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
        if output_limit < 1:
            raise ValueError(f"output_limit must be at least 1, not {output_limit!r}")
        self.python = python
        self.timeout = float(timeout)
        self.output_limit = int(output_limit)
        self.directory = f"/tmp/.collimate-kernel-{secrets.token_hex(8)}"
        self.program = f"{self.directory}/kernel.py"

    def sibling(self) -> KernelPlan:
        """The plan of a fork of this kernel: the same settings, a directory
        of its own (the fork makes it, with its copy of the program)."""
        return KernelPlan(python=self.python, timeout=self.timeout, output_limit=self.output_limit)

    def fork_command(self, forks: list[KernelPlan], seeds: list[str | None]) -> str:
        """Have this kernel fork one copy per plan in ``forks``, seeded."""
        specs = [{"directory": f.directory, "seed": s} for f, s in zip(forks, seeds, strict=True)]
        encoded = base64.b64encode(json.dumps({"forks": specs}).encode()).decode()
        return self._call("fork", self.directory, encoded)

    def _call(self, *args: str) -> str:
        # Every cell is one of these, so its start-up is the kernel's
        # per-call floor: ``-I -S`` skips site-packages (its .pth files cost
        # more than the runner's own work), and importing the program as a
        # module, not running it as a script, reuses its cached bytecode
        # instead of compiling it each call. The kernel it starts runs as a
        # script with the interpreter's full path, site-packages included.
        return shlex.join([self.python, "-I", "-S", "-c", RUNNER, self.directory, *args])

    def install_command(self, *, first_cell: str | None = None) -> str:
        """Make the private directory (0700, refused if it exists), write
        the program into it and start a kernel: one interpreter does both
        (and compiles the program once, for every runner after it), then
        runs ``first_cell`` (an encoded payload) when given, as a runner."""
        encoded = base64.b64encode(PROGRAM).decode()
        then = (
            ["start", self.directory]
            if first_cell is None
            else ["start-run", self.directory, first_cell]
        )
        command = [self.python, "-I", "-S", "-c", INSTALLER, self.directory, encoded, *then]
        return f"umask 077 && mkdir {shlex.quote(self.directory)} && {shlex.join(command)}"

    def restart_command(self) -> str:
        return self._call("restart", self.directory)

    def stop_command(self) -> str:
        return f"{self._call('stop', self.directory)}; rm -rf {shlex.quote(self.directory)}"

    def cell_payload(self, code: str, timeout: float | None) -> tuple[str, float]:
        """The cell, encoded for the runner, and its timeout."""
        seconds = self.timeout if timeout is None else float(timeout)
        if not (seconds > 0 and math.isfinite(seconds)):
            raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
        request = {"code": code, "timeout": seconds, "output_limit": self.output_limit}
        return base64.b64encode(json.dumps(request).encode()).decode(), seconds

    def cell_file(self) -> str:
        return f"{self.directory}/cell-{secrets.token_hex(4)}.json"

    def _code(self, *args: str) -> str:
        directory = repr(self.directory)
        return (
            f"import sys; sys.path[:0] = [{directory}]; import kernel; "
            f"kernel.main([{directory}, {', '.join(repr(a) for a in args)}])"
        )

    def probe_code(self) -> str:
        """Python for the template's own interpreter that prints
        :data:`PROBE_MARK` and whether it reaches this kernel (see
        :func:`probe_answer`): where it does, cells go by :meth:`run_code`
        (a code exec, which the server forks from a warm interpreter)
        rather than by :meth:`run_command` (a fresh one)."""
        return self._code("ping", self.directory)

    def run_code(self, payload: str) -> str:
        return self._code("run", self.directory, payload)

    def run_command(self, payload_or_file: str, *, from_file: bool) -> str:
        argument = f"@{payload_or_file}" if from_file else payload_or_file
        return self._call("run", self.directory, argument)

    @staticmethod
    def exec_timeout(seconds: float) -> int:
        return math.ceil(seconds) + EXEC_MARGIN_S


def probe_answer(response: dict[str, Any]) -> bool | None:
    """The probe's answer: True (a code exec reaches the kernel), False (it
    runs Python but the kernel did not answer: dead, or out of its sight;
    ask again later), None (the template's code is not Python)."""
    for line in str(response.get("stdout") or "").splitlines():
        if line.startswith(PROBE_MARK):
            return line[len(PROBE_MARK) :].strip() == "yes"
    return None


def check_setup(response: dict[str, Any], what: str) -> None:
    """A lifecycle exec (install, restart) that failed is infrastructure."""
    if response.get("exit_code") != 0:
        output = str(response.get("stdout") or "") + str(response.get("stderr") or "")
        raise CollimateError(
            f"kernel {what} failed in the sandbox (exit code "
            f"{response.get('exit_code')!r}): {output[-2000:]!r}"
        )


def parse_cell(response: dict[str, Any]) -> CellResult:
    """The runner's answer line; an exec without one is infrastructure."""
    return CellResult.from_answer(parse_answer(response))


def parse_forks(response: dict[str, Any], count: int) -> list[dict[str, Any]]:
    """The forks' reports; a fork that failed (or a missing one) is
    infrastructure, raised once the caller has stopped the others."""
    forks = parse_answer(response).get("forks")
    if not isinstance(forks, list) or len(forks) != count:
        raise CollimateError(f"the kernel answered no fork list: {forks!r:.2000}")
    return [f if isinstance(f, dict) else {"ok": False, "error": repr(f)} for f in forks]


def parse_answer(response: dict[str, Any]) -> dict[str, Any]:
    """The JSON object on the runner's answer line."""
    output = str(response.get("stdout") or "") + str(response.get("stderr") or "")
    for line in reversed(output.splitlines()):
        if line.startswith(RESULT_PREFIX):
            try:
                answer = json.loads(line[len(RESULT_PREFIX) :])
            except ValueError:
                break
            if isinstance(answer, dict):
                return answer
            break
    raise CollimateError(
        f"the kernel's runner gave no answer (exit code {response.get('exit_code')!r}): "
        f"{output[-2000:]!r}"
    )
