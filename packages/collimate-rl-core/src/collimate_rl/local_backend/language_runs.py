"""Compiling and running programs in the languages of :mod:`.toolchains`.

Both steps are execs of the language template (``lang``: a warm
interpreter whose clones also see the toolchains, see
``builtin_templates``) running :mod:`..guest.language_runner`, so compilers and
programs are confined exactly as Python code is. Builds go through the
server's :class:`~.compile_cache.CompileCache`: one compile per distinct
program, whatever the number of requests or tests.

A step the machine kept from running (``starved``: out of wall time with
CPU time to spare) is the server's failure, not the program's: it is tried
again, and if it starves every time the caller gets
:class:`LanguageInfraError`, never a verdict against the program.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import marshal
import math
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Final, Protocol

from .._guest_source import joined_source
from .compile_cache import Build, CompileCache, cache_key
from .go_cache import ensure_go_seed
from .jvm_archive import archive_of, ensure_archive
from .jvm_languages import ARCHIVE_SAMPLES, compile_files
from .precompiled import ensure_pch
from .toolchains import (
    LANGUAGE_TEMPLATE,
    Found,
    MissingToolchain,
    Toolchain,
    find_toolchains,
    resolve_language,
)
from .wire_errors import WireError

#: The name the runner is loaded as in the guest.
RUNNER_MODULE: Final = "collimate_language_runner"
#: Wall time a step gets, as a multiple of its CPU limit, and at least this
#: many seconds more: a backstop only (limits count CPU time, and idle
#: time), reached by a run the machine kept from its CPU (``starved``).
WALL_FACTOR: Final = 10.0
WALL_EXTRA_S: Final = 20.0
#: Seconds the exec gets beyond its steps' wall time (files, forks, answer).
EXEC_MARGIN_S: Final = 10
#: Tries of a step the machine starved before it is an infra error.
STARVED_TRIES: Final = 3
_MARK: Final = "\x1ecollimate-language-runner "
_CAPACITY_RETRY_S: Final = 0.01


class ExecHost(Protocol):
    """What the language runs need of the server that holds them: one
    exec in a fresh clone of a template, and which templates it has (the
    service implements it; declared here so that the runs never import
    the service that owns them)."""

    @property
    def templates(self) -> Mapping[str, Any]:
        """The server's templates by id."""
        ...

    async def exec_once(self, body: Any) -> dict[str, Any]:
        """Fork an ephemeral clone of ``body["template_id"]``, run once, discard it."""
        ...


class LanguageUnavailable(Exception):
    """The language is unknown, or not installed on this host (the message
    says what to install)."""


class LanguageInfraError(Exception):
    """The backend could not compile or run the program (never the
    program's fault): starved every time, or the runner did not answer."""


@dataclass(frozen=True)
class RunInput:
    """One run's input beyond stdin: files written into its directory
    first, and arguments (names of files there) after its command."""

    stdin: bytes
    files: Mapping[str, str] = field(default_factory=dict)  # name -> base64
    args: Sequence[str] = ()

    def wire(self) -> dict[str, Any]:
        return {
            "stdin": base64.b64encode(self.stdin).decode(),
            "files": dict(self.files),
            "args": list(self.args),
        }


@dataclass(frozen=True)
class RunRecord:
    """One run of a program on one input."""

    limit: str | None  # time_limit / memory_limit / output_limit, or None
    return_code: int | None
    signal: int | None
    stdout: bytes
    stderr: bytes
    cpu: float
    wall: float
    peak_rss: int
    files: Mapping[str, str]  # fetched files, base64
    #: the whole stdout's size and digests (``stdout`` may be only its start)
    stdout_size: int = 0
    digests: Mapping[str, str] = field(default_factory=dict)
    #: what ended a run the runner killed: its CPU time (``cpu``), time in
    #: which none of its threads could run (``idle``), the wall backstop
    #: (``wall``), ``memory`` or ``output``; None when it ended by itself
    ended_by: str | None = None
    idle: float = 0.0


#: A run whose runner stopped before reporting it: the program (or one
#: before it in the same exec) stopped or killed the runner.
_RUNNER_STOPPED: Final = {
    "phase": "run",
    "limit": None,
    "return_code": None,
    "signal": 9,
    "stdout": "",
    "stderr": base64.b64encode(b"the runner was stopped during this run").decode(),
}


def runner_source() -> str:
    """The runner's program: ``guest/language_runner.py`` with the guest
    modules it imports joined in (the graders' separation confines its
    runs; see ``language_runner``)."""
    return joined_source("language_runner")


@lru_cache(maxsize=1)
def _runner_block() -> str:
    """The runner, loaded in the guest from bytecode compiled here when the
    guest's interpreter is this one's version (else from source)."""
    code = marshal.dumps(compile(runner_source(), RUNNER_MODULE, "exec"))
    return (
        "import sys, marshal\n"
        f"_m = type(sys)({RUNNER_MODULE!r})\n"
        f"if sys.implementation.cache_tag == {sys.implementation.cache_tag!r}:\n"
        f"    _c = marshal.loads(bytes.fromhex({code.hex()!r}))\n"
        "else:\n"
        f"    _c = compile({runner_source()!r}, {RUNNER_MODULE!r}, 'exec')\n"
        "exec(_c, _m.__dict__)\n"
    )


def _input_wire(item: bytes | RunInput) -> str | dict[str, Any]:
    return item.wire() if isinstance(item, RunInput) else base64.b64encode(item).decode()


#: What an executable file starts with: an ELF header, or a ``#!`` line.
_EXECUTABLE_MAGIC: Final = (b"\x7fELF", b"#!")
_BUILD_PREFIX: Final = "{build}/"


def not_runnable(tc: Toolchain, files: Mapping[str, str]) -> str | None:
    """Why the build ``files`` (relative name, ``*`` after an executable's
    -> base64) hold nothing ``tc`` can run, or None. A compiler may succeed
    and build nothing runnable (Go builds a package that is not ``main``
    into an archive; javac a file whose classes are not the one run): that
    is the program's compile error, never a run that cannot start."""
    names = {name.removesuffix("*"): name for name in files}
    first = tc.run[0]
    if first.startswith(_BUILD_PREFIX):
        name = first[len(_BUILD_PREFIX) :]
        if name not in names:
            return f"the build has no {name} to run"
        head = base64.b64decode(files[names[name]][:8])
        if not names[name].endswith("*") or not head.startswith(_EXECUTABLE_MAGIC):
            return f"the build's {name} is not a program (no executable was built)"
    for arg in tc.run[1:]:
        if arg.startswith(_BUILD_PREFIX) and arg[len(_BUILD_PREFIX) :] not in names:
            return f"the build has no {arg[len(_BUILD_PREFIX) :]} to run"
    if tc.language in ("java", "scala"):
        main = tc.run[-1].replace(".", "/") + ".class"
        if main not in names:
            return f"the build has no class {tc.run[-1]} to run (its main class)"
    return None


def wall_limit(cpu_limit: float) -> float:
    return max(cpu_limit * WALL_FACTOR, cpu_limit + WALL_EXTRA_S)


def marked_records(output: str, mark: str) -> list[dict[str, Any]]:
    """The JSON objects a guest runner wrote to ``output``, in order, each
    on a line of its own after ``mark`` (other lines, and marked ones that
    are not an object, are the run's own and passed over)."""
    found = []
    for line in output.split("\n"):  # not splitlines(): the marker starts with \x1e
        if line.startswith(mark):
            try:
                record = json.loads(line[len(mark) :])
            except ValueError:
                continue
            if isinstance(record, dict):
                found.append(record)
    return found


def _stopped_by_a_run(records: Sequence[Mapping[str, Any]]) -> bool:
    """Whether an exec that ran out of its time may have been stopped by the
    program: a run had begun and not been reported, on a runner that could
    not keep its runs from signalling it (no scoped Landlock here). Once
    the program's code has run, a doubt is the program's failure."""
    started = next((r for r in records if r.get("phase") == "started"), {})
    if started.get("confined"):
        return False
    begun = {r.get("index") for r in records if r.get("phase") == "begin"}
    reported = {r.get("index") for r in records if r.get("phase") == "run"}
    return bool(begun - reported)


class LanguageRuns:
    """Compiles (cached) and runs over one backend service."""

    def __init__(self, service: ExecHost, cache: CompileCache | None = None) -> None:
        self.service = service
        self.cache = cache if cache is not None else CompileCache()
        self._found: dict[str, Found] | None = None
        self._probe: asyncio.Future[dict[str, Found]] | None = None
        self._pch: asyncio.Future[bool] | None = None
        self._go: asyncio.Future[bool] | None = None
        self._archives: dict[str, asyncio.Future[bool]] = {}

    # -- which languages -------------------------------------------------

    def start_probe(self) -> None:
        """Look for the toolchains in a thread (each asks a compiler for its
        version: seconds on a busy host, kept off the server's start)."""
        if self._probe is not None:
            return
        loop = asyncio.get_running_loop()
        self._probe = loop.create_future()
        probe = self._probe

        def deliver(found: dict[str, Found] | BaseException) -> None:
            if probe.done():
                return
            if isinstance(found, BaseException):
                probe.set_exception(found)
                probe.exception()
            else:
                self._found = found
                probe.set_result(found)

        def work() -> None:
            try:
                result: dict[str, Found] | BaseException = find_toolchains()
            except Exception as exc:
                result = exc
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits
                loop.call_soon_threadsafe(deliver, result)

        threading.Thread(target=work, name="collimate-toolchains", daemon=True).start()

    async def found(self) -> dict[str, Found]:
        if self._found is not None:
            return self._found
        self.start_probe()
        assert self._probe is not None
        return await asyncio.shield(self._probe)

    def describe(self) -> dict[str, Any]:
        """For ``/v1/health``: each language, found or not (``probing``
        until the toolchains have been looked for)."""
        if self._found is None:
            return {"probing": True}
        return {name: t.describe() for name, t in self._found.items()}

    async def toolchain(self, language: str) -> Toolchain:
        name = resolve_language(language)
        if name is None:
            raise LanguageUnavailable(f"unknown language {language!r}")
        found = (await self.found())[name]
        if isinstance(found, MissingToolchain):
            raise LanguageUnavailable(found.message())
        if LANGUAGE_TEMPLATE not in self.service.templates:
            raise LanguageUnavailable(f"this backend has no {LANGUAGE_TEMPLATE!r} template")
        return found

    # -- steps -----------------------------------------------------------

    async def build(
        self, tc: Toolchain, source: str, files: Mapping[str, str], cpu_limit: float
    ) -> Build:
        """``source`` compiled (once per distinct program, see the cache).
        ``files`` (relative name -> base64) are written beside it."""
        files = {**compile_files(tc), **files}
        key = cache_key(tc.language, tc.compiler, tc.compile or (), source, files)

        async def compile_() -> Build:
            for _ in range(STARVED_TRIES):
                records = await self._step(
                    {
                        "op": "compile",
                        "toolchain": tc.wire(),
                        "source": source,
                        "files": dict(files),
                        "cpu_limit": cpu_limit,
                        "wall_limit": wall_limit(cpu_limit),
                    },
                    wall_limit(cpu_limit),
                    "compiled",
                )
                record = records[0]
                build = Build(
                    verdict=str(record["verdict"]),
                    output=str(record.get("output", "")),
                    files=dict(record.get("build") or {}),
                    return_code=record.get("return_code"),
                    cpu=float(record.get("cpu", 0.0)),
                    wall=float(record.get("wall", 0.0)),
                )
                if build.verdict == "start_failed":
                    raise LanguageInfraError(
                        f"the {tc.language} compiler could not be started: "
                        f"{base64.b64decode(build.output).decode('utf-8', 'replace')[-300:]}"
                    )
                if build.verdict == "ok":
                    unrunnable = not_runnable(tc, build.files)
                    if unrunnable is not None:
                        # the candidate's build, and so its compile error
                        text = base64.b64decode(build.output) + f"\n{unrunnable}\n".encode()
                        return replace(
                            build, verdict="error", output=base64.b64encode(text).decode(), files={}
                        )
                if build.verdict != "starved":
                    return build
            raise LanguageInfraError(
                f"the {tc.language} compile was kept from running {STARVED_TRIES} times "
                "(the machine is too busy)"
            )

        if not tc.compiled:
            return Build("ok", "", {}, 0, 0.0, 0.0)
        if tc.language == "cpp" and tc.compile:
            await self._precompiled_header(tc.compile[0])
        if tc.language in ("go", "go_test") and tc.compile:
            await self._go_seed(tc.compile[0], tc.env)
        if archive_of(tc.compile) is not None:
            await self._class_archive(tc)
        return await self.cache.get(key, compile_)

    async def _class_archive(self, tc: Toolchain) -> None:
        """The JVM compiler's class archive made before its first compile
        (once per compiler: on the host, seconds; see ``jvm_archive``)."""
        assert tc.compile is not None
        archive = archive_of(tc.compile) or ""
        if archive not in self._archives:
            sample = ARCHIVE_SAMPLES.get(tc.language, {})
            self._archives[archive] = asyncio.ensure_future(
                asyncio.to_thread(ensure_archive, tc.compile, dict(tc.env), sample)
            )
        await asyncio.shield(self._archives[archive])

    async def _go_seed(self, go: str, env: Mapping[str, str]) -> None:
        """The warm Go build cache built before the first Go compile (once
        per Go: on the host, tens of seconds; see ``go_cache``)."""
        if self._go is None:
            env = {k: v for k, v in env.items() if k != "COLLIMATE_GO_SEED"}
            self._go = asyncio.ensure_future(asyncio.to_thread(ensure_go_seed, go, env))
        await asyncio.shield(self._go)

    async def _precompiled_header(self, gxx: str) -> None:
        """``bits/stdc++.h`` precompiled before the first C++ compile (once
        per compiler: built on the host, seconds; see ``precompiled``)."""
        if self._pch is None:
            self._pch = asyncio.ensure_future(asyncio.to_thread(ensure_pch, gxx))
        await asyncio.shield(self._pch)

    async def run(
        self,
        tc: Toolchain,
        build: Build,
        source: str,
        inputs: Sequence[bytes | RunInput],
        *,
        cpu_limit: float,
        memory_bytes: int,
        output_bytes: int,
        files: Mapping[str, str] | None = None,
        fetch_files: Sequence[str] = (),
        return_stdout: int | None = None,
        stop_after_failure: bool = False,
        expect: Sequence[str | None] | None = None,
        compare: str | None = None,
        own_time: bool = False,
    ) -> list[RunRecord]:
        """The program on each of ``inputs``, each in a fresh process (in
        one exec). A run the machine starved is run again, alone.

        ``stop_after_failure``: once a run fails (a limit, a nonzero exit, or
        an output whose ``compare`` digest is not its ``expect`` entry), the
        runs after it are not started and come back ``limit="skipped"``.
        ``own_time``: ``cpu_limit`` bounds the run's own time too (its wall
        time less the time it waited for a CPU: sleeping counts), as
        SandboxFusion's ``run_timeout`` bounds its wall time."""
        results: list[RunRecord | None] = [None] * len(inputs)
        todo = list(range(len(inputs)))
        for _ in range(STARVED_TRIES):
            records = await self._step(
                {
                    "op": "run",
                    "toolchain": tc.wire(),
                    "build": dict(build.files),
                    "source": None if tc.compiled else source,
                    "files": dict(files or {}),
                    "inputs": [_input_wire(inputs[i]) for i in todo],
                    "cpu_limit": cpu_limit,
                    "wall_limit": wall_limit(cpu_limit),
                    "own_time": own_time,
                    "memory_bytes": memory_bytes,
                    "output_bytes": output_bytes,
                    "fetch_files": list(fetch_files),
                    "return_stdout": output_bytes if return_stdout is None else return_stdout,
                    "stop_after_failure": stop_after_failure,
                    "expect": [expect[i] for i in todo] if expect is not None else None,
                    "compare": compare,
                },
                wall_limit(cpu_limit) * len(todo),
                "run",
            )
            records += [_RUNNER_STOPPED] * (len(todo) - len(records))
            again = []
            for at, record in zip(todo, records, strict=True):
                if record.get("limit") == "start_failed":
                    why = base64.b64decode(record.get("stderr", "")).decode("utf-8", "replace")
                    raise LanguageInfraError(f"a {tc.language} program could not be started: {why}")
                if record.get("limit") == "starved":
                    again.append(at)
                    continue
                results[at] = RunRecord(
                    limit=record.get("limit"),
                    return_code=record.get("return_code"),
                    signal=record.get("signal"),
                    stdout=base64.b64decode(record.get("stdout", "")),
                    stderr=base64.b64decode(record.get("stderr", "")),
                    cpu=float(record.get("cpu", 0.0)),
                    wall=float(record.get("wall", 0.0)),
                    peak_rss=int(record.get("peak_rss", 0)),
                    files=dict(record.get("files") or {}),
                    stdout_size=int(record.get("stdout_size", 0)),
                    digests=dict(record.get("digests") or {}),
                    ended_by=record.get("ended_by"),
                    idle=float(record.get("idle", 0.0)),
                )
            if not again:
                return [r for r in results if r is not None]
            todo = again
        raise LanguageInfraError(
            f"a {tc.language} run was kept from running {STARVED_TRIES} times "
            "(the machine is too busy)"
        )

    async def _step(
        self, request: dict[str, Any], wall_s: float, phase: str
    ) -> list[dict[str, Any]]:
        """One exec of the runner; its records of ``phase``."""
        blob = base64.b64encode(json.dumps(request).encode()).decode()
        body = {
            "template_id": LANGUAGE_TEMPLATE,
            "code": f"{_runner_block()}_m._lr_main({blob!r})\n",
            "timeout_seconds": min(3600, math.ceil(wall_s) + EXEC_MARGIN_S),
        }
        while True:
            try:
                result = await self.service.exec_once(body)
                break
            except WireError as err:
                if err.error_code != "at_capacity":
                    raise LanguageInfraError(f"{err.error_code}: {err.message}") from err
            await asyncio.sleep(_CAPACITY_RETRY_S)
        records = marked_records(result["stdout"], _MARK)
        if not any(r.get("phase") == "started" for r in records):
            tail = (result["stdout"] + result.get("stderr", ""))[-500:]
            raise LanguageInfraError(
                f"the language runner did not start (exit {result['exit_code']}): {tail}"
            )
        found = [r for r in records if r.get("phase") == phase]
        if result["exit_code"] == -1 and phase == "run" and _stopped_by_a_run(records):
            return found  # that run and those after it are the program's failures
        if result["exit_code"] == -1 or (phase == "compiled" and not found):
            # out of the exec's time (which covers every step's own wall
            # limit): the runner itself was kept from running
            tail = (result.get("stderr") or result["stdout"])[-500:]
            raise LanguageInfraError(
                f"the language runner stopped without its report (exit {result['exit_code']}): "
                f"{tail}"
            )
        # a run that stopped its runner (it may signal it: same uid) ends
        # the exec early: that run and those after it are its failures
        return found
