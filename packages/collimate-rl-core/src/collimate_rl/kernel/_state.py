"""What both kernels share: :class:`CellResult`, :class:`CellError`, the
guest commands a kernel sends, and reading the runner's answer.

``AsyncKernel`` is written in ``collimate_rl/kernel/_async.py``, ``Kernel``
generated from it (``kernel/_sync.py``); the public module is ``collimate_rl.kernel``; the program
that runs in the guest is ``collimate_rl/guest/kernel_program.py``, shipped
as one file (:func:`collimate_rl._guest_source.joined_source`).
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import secrets
import shlex
from dataclasses import dataclass, field, replace
from typing import Any

from .._guest_source import joined_source
from ..errors import CollimateError

__all__ = ["PROBE_MARK", "CellError", "CellResult", "KernelPlan", "LostKernel", "probe_answer"]

#: the guest program (with the guest modules it imports joined in), copied
#: into the sandbox once per kernel
PROGRAM = joined_source("kernel_program").encode("utf-8")
#: the line the runner prints its answer on (the exec's output is merged)
RESULT_PREFIX = "@@collimate-kernel-result@@ "
#: what a runner answers when the kernel's program cannot be loaded (a cell
#: deleted or rewrote it): the cell did not run, and no kernel is left, so
#: the SDK makes one anew and sends the cell again
MISSING_ANSWER = RESULT_PREFIX + json.dumps(
    {
        "error": {
            "type": "KernelLost",
            "message": "the interpreter's own files were deleted or damaged",
            "traceback": "",
        },
        "unavailable": True,
        "not_run": True,
    }
)


def _loader(path: str, argv: str, missing: str) -> str:
    """Python that imports the program from its directory (so its bytecode
    is cached there) and runs ``kernel.main(argv)``, or prints ``missing``
    when the program cannot be loaded."""
    return (
        f"import sys; sys.path[:0] = [{path}]\n"
        "try:\n    import kernel\n"
        f"except Exception:\n    print({missing!r})\n    raise SystemExit(3)\n"
        f"kernel.main({argv})"
    )


#: how a guest command runs the program: ``main`` given the command line
RUNNER = _loader("sys.argv[1]", "sys.argv[1:]", MISSING_ANSWER)
#: the install command's program: write the kernel's program into its
#: directory, then run its ``start`` (or ``start-run``) as :data:`RUNNER` would
INSTALLER = (
    "import binascii, sys; d = sys.argv[1]; "
    "open(d + '/kernel.py', 'wb').write(binascii.a2b_base64(sys.argv[2])); "
    "sys.path[:0] = [d]; import kernel; kernel.main([d, *sys.argv[3:]])"
)
#: the program written afresh and a kernel started, whatever is left of the
#: old one (the program's ``reinstall``; run from the text, the file may be gone)
REINSTALLER = (
    "import binascii, sys, types; d = sys.argv[1]; p = binascii.a2b_base64(sys.argv[2]); "
    "k = types.ModuleType('kernel'); k.__file__ = d + '/kernel.py'; "
    "exec(compile(p, k.__file__, 'exec'), k.__dict__); k.reinstall(d, p, sys.argv[3] or None)"
)
#: what the probe prints (then ``yes`` or ``no``) where a code exec runs Python
PROBE_MARK = "@@collimate-kernel-reachable@@"
#: a cell this big (encoded) travels as a file rather than in the command line
INLINE_CELL_LIMIT = 64 * 1024
#: seconds the exec gets beyond the cell's timeout: the interrupt's grace,
#: a second interrupt, killing and starting a kernel
EXEC_MARGIN_S = 30


#: the error types of a cell the interpreter was lost under (the kernel's
#: own words, not an exception of the cell's)
KERNEL_ERRORS = frozenset({"KernelDied", "KernelRestarted", "KernelUnavailable", "KernelLost"})


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


def _cell_error(error: Any) -> CellError | None:
    """The exception an answer's ``error`` object describes (``None``: there is none)."""
    if not isinstance(error, dict):
        return None
    return CellError(
        type=str(error.get("type") or ""),
        message=str(error.get("message") or ""),
        traceback=str(error.get("traceback") or ""),
    )


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

    ``restarted`` also says the interpreter is a fresh one because of what
    an earlier cell left (it killed the interpreter, deleted its files):
    then the cell ran in the fresh one and ``error`` is its own. ``note``
    says why the interpreter was restarted, or the sandbox replaced, when
    it was. A cell never makes a call raise: whatever it does to the
    interpreter, its processes or its files comes back here.
    """

    stdout: str
    stderr: str
    value: str | None
    error: CellError | None
    duration_s: float
    timed_out: bool = False
    restarted: bool = False
    truncated: bool = False
    note: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        """The cell ran to its end without an exception."""
        return self.error is None

    @classmethod
    def from_answer(cls, answer: dict[str, Any]) -> CellResult:
        return cls(
            stdout=str(answer.get("stdout") or ""),
            stderr=str(answer.get("stderr") or ""),
            value=None if answer.get("value") is None else str(answer["value"]),
            error=_cell_error(answer.get("error")),
            duration_s=float(answer.get("duration_s") or 0.0),
            timed_out=bool(answer.get("timed_out")),
            restarted=bool(answer.get("restarted")),
            truncated=bool(answer.get("truncated")),
            note=str(answer["note"]) if answer.get("note") else None,
            raw=answer,
        )


@dataclass(frozen=True)
class LostKernel:
    """A cell's exec that brought back no usable result, or a result saying
    no kernel is left (``why``, in words for the model). ``ran``: the cell
    may have run (then it is not sent again); ``result``: what the runner
    said of it, when it said anything."""

    why: str
    ran: bool
    timed_out: bool = False
    result: CellResult | None = None

    def cell_result(self, how: str) -> CellResult:
        """The cell's result once the kernel was made anew (``how``)."""
        note = f"{self.why}; {how}"
        if self.result is not None:
            return replace(self.result, restarted=True, note=note)
        return CellResult(
            stdout="",
            stderr="",
            value=None,
            error=CellError("KernelLost", note, ""),
            duration_s=0.0,
            timed_out=self.timed_out,
            restarted=True,
            note=note,
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

    def reinstall_command(self, seed: str | None = None) -> str:
        """Make the kernel anew in its directory, whatever is left of it
        (``seed``: a fork's, so the new kernel is confined as a fork)."""
        encoded = base64.b64encode(PROGRAM).decode()
        return shlex.join(
            [self.python, "-I", "-S", "-c", REINSTALLER, self.directory, encoded, seed or ""]
        )

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

    def _code(self, missing: str, *args: str) -> str:
        directory = repr(self.directory)
        argv = f"[{directory}, {', '.join(repr(a) for a in args)}]"
        return _loader(directory, argv, missing)

    def probe_code(self) -> str:
        """Python for the template's own interpreter that prints
        :data:`PROBE_MARK` and whether it reaches this kernel (see
        :func:`probe_answer`): where it does, cells go by :meth:`run_code`
        (a code exec, which the server forks from a warm interpreter)
        rather than by :meth:`run_command` (a fresh one)."""
        return self._code(f"{PROBE_MARK} no", "ping", self.directory)

    def run_code(self, payload: str) -> str:
        return self._code(MISSING_ANSWER, "run", self.directory, payload)

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


def read_cell(response: dict[str, Any]) -> CellResult | LostKernel:
    """What a cell's exec says: the cell's result, or that the kernel was
    lost. Never raises: nothing in a cell's exec but the cell and what the
    cells before it left could have made it fail.

    No answer line: the runner was killed, stopped or broken, maybe by the
    cell itself, which may have run (it is not sent again). An answer line
    no runner of ours prints (not an object, fields of the wrong types):
    the kernel's program was replaced by an earlier cell, so this cell did
    not reach the kernel. An answer saying no kernel is left: as it says."""
    timed_out = response.get("exit_code") == -1 or bool(response.get("timed_out"))
    line = answer_line(response)
    if line is None:
        return LostKernel(no_answer(response), ran=True, timed_out=timed_out)
    try:
        answer = json.loads(line)
        result = CellResult.from_answer(answer)
    except (ValueError, TypeError, AttributeError):
        why = "the interpreter's program was replaced: it answered something else"
        return LostKernel(why, ran=False, timed_out=timed_out)
    if not (answer.get("unavailable") or answer.get("not_run")):
        return result
    ran = not answer.get("not_run")
    why = result.note or (result.error.message if result.error else "no interpreter was left")
    return LostKernel(why, ran=ran, timed_out=result.timed_out, result=result if ran else None)


def answer_line(response: dict[str, Any]) -> str | None:
    """The text after :data:`RESULT_PREFIX` on the exec's last answer line."""
    output = str(response.get("stdout") or "") + str(response.get("stderr") or "")
    for line in reversed(output.splitlines()):
        if line.startswith(RESULT_PREFIX):
            return line[len(RESULT_PREFIX) :]
    return None


def no_answer(response: dict[str, Any]) -> str:
    """Why a cell's exec brought back no answer, in words for the model."""
    output = (str(response.get("stdout") or "") + str(response.get("stderr") or "")).strip()
    code = response.get("exit_code")
    if code == -1 or response.get("timed_out"):
        what = "the interpreter's helper process stopped answering (its exec timed out)"
    else:
        what = f"the interpreter's helper process ended without an answer (exit code {code!r})"
    return f"{what}: {output[-300:]!r}" if output else what


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
    marked = [line for line in output.splitlines() if line.startswith(RESULT_PREFIX)]
    if marked:  # the last one is the answer
        with contextlib.suppress(ValueError):
            answer = json.loads(marked[-1][len(RESULT_PREFIX) :])
            if isinstance(answer, dict):
                return answer
    raise CollimateError(
        f"the kernel's runner gave no answer (exit code {response.get('exit_code')!r}): "
        f"{output[-2000:]!r}"
    )
