"""The simplest honest engine: one cold subprocess per exec, no sandbox.

It exists as the floor every other mode falls back to (and as the reference
the faster engines are checked against): each exec is a fresh ``/bin/sh -c``
or ``python -I`` process with merged output, rlimits, its own process group
killed at timeout. It isolates nothing, and says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import shutil
import signal
import sys
import tempfile
import time
import uuid
from collections.abc import Callable

from .api import EgressMode, ExecJob, ExecOutcome, IsolationLevel, Limits, TemplateSpec
from .files import write_job_files
from .output import read_capped

# Runs in the exec's interpreter: seed `random` from the seed, then run the code
# file as __main__ (tracebacks name "<string>", like `python -c`).
_PY_BOOT = (
    "import sys,random\n"
    "random.seed(int(sys.argv[1],16))\n"
    "src=open(sys.argv[2]).read()\n"
    "sys.argv=['-c']\n"
    "g={'__name__':'__main__','__builtins__':__builtins__}\n"
    "exec(compile(src,'<string>','exec'),g)\n"
)


def rlimit_preexec(limits: Limits) -> Callable[[], None]:
    """A ``preexec_fn`` applying the template's rlimits in the child."""

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds))
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.max_processes, limits.max_processes))
        resource.setrlimit(
            resource.RLIMIT_FSIZE, (limits.file_size_bytes, limits.file_size_bytes)
        )
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


class SubprocessClone:
    """A private working directory; every exec is a fresh child process."""

    def __init__(self, template: TemplateSpec, root: str) -> None:
        self.clone_id = "c_" + uuid.uuid4().hex[:16]
        self.endpoints: dict[str, str] = {}
        self._template = template
        self._root = tempfile.mkdtemp(prefix=self.clone_id + "-", dir=root)
        self._work = os.path.join(self._root, "work")
        os.mkdir(self._work)
        self._procs: set[asyncio.subprocess.Process] = set()
        self._closed = False

    async def run(self, job: ExecJob) -> ExecOutcome:
        if self._closed:
            raise RuntimeError("clone is closed")
        limits = self._template.limits
        t0 = time.perf_counter()
        err = write_job_files(job.files, self._work, private_root=None)
        if err is not None:
            return ExecOutcome(err.encode(), 1, False, False, 0.0, 0.0, "off")
        if job.kind == "code" and self._template.kind == "python":
            code_path = os.path.join(self._root, "code.py")
            with open(code_path, "w") as fh:
                fh.write(job.source)
            argv = [self._template.python or sys.executable, "-I", "-c", _PY_BOOT, job.seed,
                    code_path]
        else:
            argv = ["/bin/sh", "-c", job.source]
        rfd, wfd = os.pipe()
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=wfd,
                stderr=wfd,
                cwd=self._work,
                start_new_session=True,
                preexec_fn=rlimit_preexec(limits),
                env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": self._work,
                     "TMPDIR": self._work, "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"},
            )
        finally:
            os.close(wfd)
        fork_ms = (time.perf_counter() - t0) * 1000
        self._procs.add(proc)
        t1 = time.perf_counter()
        try:
            reader = asyncio.ensure_future(read_capped(rfd, limits.output_bytes))
            try:
                await asyncio.wait_for(asyncio.shield(proc.wait()), job.timeout_s)
                timed_out = False
            except asyncio.TimeoutError:
                timed_out = True
                _killpg(proc.pid)
                await proc.wait()
            try:
                # an escaped grandchild may still hold the pipe: do not wait forever
                output, truncated = await asyncio.wait_for(asyncio.shield(reader), 2.0)
            except asyncio.TimeoutError:
                reader.cancel()
                output, truncated = b"", False
        except BaseException:
            _killpg(proc.pid)
            with contextlib.suppress(Exception):
                await proc.wait()
            raise
        finally:
            self._procs.discard(proc)
            os.close(rfd)
        exec_ms = (time.perf_counter() - t1) * 1000
        if timed_out:
            output += f"\ntimeout after {float(job.timeout_s)}s\n".encode()
            return ExecOutcome(output, -1, True, truncated, fork_ms, exec_ms, "off")
        rc = proc.returncode if proc.returncode is not None else -1
        if rc < 0:
            rc = 128 - rc
        return ExecOutcome(output, rc, False, truncated, fork_ms, exec_ms, "off")

    async def close(self) -> None:
        self._closed = True
        for proc in list(self._procs):
            _killpg(proc.pid)
        shutil.rmtree(self._root, ignore_errors=True)


def _killpg(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


class SubprocessEngine:
    """Process mode without warm forks (the floor; NOT a sandbox)."""

    isolation: IsolationLevel = "process"
    isolation_detail = (
        "process (NOT a sandbox): cold subprocess per exec, rlimits and process-group kill "
        "only; the host file system, network and other processes are fully reachable"
    )

    def __init__(self) -> None:
        self._root = tempfile.mkdtemp(prefix="collimate-engine-")
        self._clones: set[SubprocessClone] = set()

    async def start(self, templates: list[TemplateSpec]) -> None:
        return None

    async def open_clone(
        self, template: TemplateSpec, *, egress: EgressMode | None
    ) -> SubprocessClone:
        clone = SubprocessClone(template, self._root)
        self._clones.add(clone)
        return clone

    async def close(self) -> None:
        for clone in list(self._clones):
            await clone.close()
        shutil.rmtree(self._root, ignore_errors=True)
