"""A SandboxFusion-compatible ``POST /run_code`` on the local backend.

verl's sandbox_fusion reward (and anything else written against
SandboxFusion) POSTs ``{"code", "stdin", "compile_timeout", "run_timeout",
"memory_limit_MB", "language", "files", "fetch_files"}`` to ``/run_code`` and
reads ``status`` (``Success`` / ``Failed`` / ``SandboxError``),
``run_result`` (``status``: ``Finished`` / ``TimeLimitExceeded`` / ``Error``,
``return_code``, ``stdout``, ``stderr``, ``execution_time``) and
``compile_result``. Pointing such a client at ``collimate serve`` gives it
the backend's isolation and warm forks with no other change.

Python runs (the ``python`` template's warm interpreter, one isolated
one-shot exec per request, see ``guest/sandbox_fusion_runner.py``). A language
SandboxFusion knows but this backend cannot run is answered as SandboxFusion
answers a run the sandbox itself failed: HTTP 200, ``"SandboxError"``. A
body SandboxFusion would reject gets its validation answer: HTTP 422 with a
``detail`` list (``type``, ``loc``, ``msg``, ``input``).

``files`` and ``fetch_files`` name paths as SandboxFusion does: relative to
the run's working directory, or absolute, that path inside the sandbox (a
namespaced clone's private root, which is the clone's own). Under process
isolation there is no such root, ``/`` is the host's, and a request with
an absolute path is answered ``SandboxError`` saying so; never on the
host. A path that can never be served (leaving the run's directory, under
/proc, /sys or /dev) is a 422. The runners follow no symlink on a path and
write and read regular files only (see ``language_runner``).

Unlike the daemon wire, ``/run_code`` never sheds load with 503
``at_capacity``: its clients (verl) count any HTTP error as a failed test
case, so a request waits for an in-flight slot instead.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import marshal
import math
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import cache
from typing import Any, Final

from .._guest_source import joined_source
from ..wire import MAX_EXEC_TIMEOUT_S
from .compile_cache import Build
from .jvm_languages import NO_OBJECT, with_main_class
from .language_runs import (
    LanguageInfraError,
    LanguageRuns,
    LanguageUnavailable,
    RunRecord,
    marked_records,
)
from .program_harness.java import JAVATUPLES_JAR
from .routing import Request, Response, Router
from .sandbox_fusion_csharp import sandbox_fusion_program
from .service import BackendService
from .toolchains import Toolchain, junit_source, resolve_language
from .wire_errors import WireError

__all__ = [
    "LANGUAGES",
    "RUNNABLE_LANGUAGES",
    "RUNNER_MODULE",
    "absolute_paths_refused",
    "build_sandbox_fusion_router",
    "jupyter_response",
    "validate_run_jupyter",
    "path_problem",
    "response_from_output",
    "validate_run_code",
]

#: Every value SandboxFusion's ``language`` field accepts.
LANGUAGES: Final = (
    "python", "cpp", "nodejs", "go", "go_test", "java", "php", "csharp", "bash",
    "typescript", "sql", "rust", "cuda", "lua", "R", "perl", "D_ut", "ruby", "scala",
    "julia", "pytest", "junit", "kotlin_script", "jest", "verilog", "python_gpu",
    "lean", "swift", "racket",
)  # fmt: skip
#: The languages this backend runs (where the host has their toolchains:
#: see ``toolchains``; one that is missing is answered ``SandboxError``
#: naming what to install, as is one ``toolchains`` knows but no registry
#: supplies: julia, swift, lean, cuda, python_gpu).
RUNNABLE_LANGUAGES: Final = (
    "python", "cpp", "java", "nodejs", "typescript", "rust", "go",
    "bash", "perl", "php", "lua", "ruby",
    "pytest", "junit", "jest", "go_test",
    "csharp", "D_ut",
    "R", "racket", "verilog", "sql",
    "scala", "kotlin_script",
)  # fmt: skip
#: Languages SandboxFusion runs from source (``kotlin script.kts``) that
#: this backend compiles once and then runs: a compile error is answered
#: as SandboxFusion's run of the script answers it (``run_result``, no
#: ``compile_result``), and the compile has at least ``run_timeout``.
_RUN_FROM_SOURCE: Final = ("kotlin_script",)
#: Seconds the exec gets beyond ``run_timeout`` (writing files, forking, reading back).
EXEC_MARGIN_S: Final = 10
#: How long a request waits before trying again for an in-flight slot.
_CAPACITY_RETRY_S: Final = 0.01
_MARK: Final = "\x1ecollimate-sandbox-fusion "
#: At most this much of a run's stdout is returned (as the python runner does).
_OUTPUT_CAP: Final = 5 * 1024 * 1024
#: The name the built-in python templates preload the runner as.
RUNNER_MODULE: Final = "collimate_sandbox_fusion_runner"


def runner_source() -> str:
    """The runner program's source: ``guest/sandbox_fusion_runner.py`` with
    the guest modules it imports joined in (made once)."""
    return joined_source("sandbox_fusion_runner")


@cache
def loader_block(guest: str, module: str) -> str:
    """Loading the guest program ``guest`` as ``module`` in the guest: its
    bytecode, compiled once here, where the guest's interpreter is this
    one's version (compiling it there would cost more than the rest of a
    request), else its source. Not preloaded in the templates: every fork of
    a warm interpreter would carry it, graders included."""
    source = joined_source(guest)
    code = marshal.dumps(compile(source, module, "exec"))
    return (
        "import sys, marshal\n"
        f"_m = sys.modules.get({module!r})\n"
        "if _m is None:\n"
        f"    _m = type(sys)({module!r})\n"
        f"    if sys.implementation.cache_tag == {sys.implementation.cache_tag!r}:\n"
        f"        _c = marshal.loads(bytes.fromhex({code.hex()!r}))\n"
        "    else:\n"
        f"        _c = compile({source!r}, {module!r}, 'exec')\n"
        "    exec(_c, _m.__dict__)\n"
    )


def _runner_block() -> str:
    return loader_block("sandbox_fusion_runner", RUNNER_MODULE)


def exec_code(blob: str) -> str:
    """The exec's code for one request: the runner (a template may have
    preloaded it as ``RUNNER_MODULE``), then the request."""
    return f"{_runner_block()}_m._sf_main({blob!r})\n"


class _Invalid(Exception):
    """A body SandboxFusion's validation would reject (answered 422)."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__(errors)
        self.errors = errors


def _error(kind: str, field: str, msg: str, value: Any, **ctx: Any) -> dict[str, Any]:
    """One entry of FastAPI's 422 ``detail`` list."""
    entry: dict[str, Any] = {"type": kind, "loc": ["body", field], "msg": msg, "input": value}
    if ctx:
        entry["ctx"] = ctx
    return entry


def _number(body: Mapping[str, Any], field: str, default: float, errors: list[Any]) -> float:
    value = body.get(field, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        errors.append(_error("float_type", field, "Input should be a valid number", value))
        return default
    return float(value)


#: Trees of the kernel: no request's file is written or read there (but
#: under the clone's own /dev/shm).
_KERNEL_TREES: Final = ("/proc", "/sys", "/dev")
_OWN_DEV: Final = "/dev/shm/"


def path_problem(name: str) -> str | None:
    """Why a ``files`` or ``fetch_files`` path can never be served, or None.

    As in SandboxFusion a relative path is resolved against the run's
    working directory and an absolute one is that path inside the sandbox;
    here a relative one must stay inside that directory, an absolute one
    must not be ``/`` nor under /proc, /sys or /dev (the kernel's; /dev/shm
    is the sandbox's own). Whether an absolute path can be served at all
    depends on the isolation (see :func:`absolute_paths_refused`)."""
    if not name or "\0" in name:
        return "not a path"
    if name.startswith("/"):
        norm = "/" + os.path.normpath(name).lstrip("/")
        if norm == "/":
            return "not a file"
        for tree in _KERNEL_TREES:
            if (norm == tree or norm.startswith(tree + "/")) and not norm.startswith(_OWN_DEV):
                return f"{tree} is the kernel's, not the sandbox's"
        return None
    norm = os.path.normpath(name)
    if norm in (".", "..") or norm.startswith("../"):
        return "a relative path must stay inside the run's directory"
    return None


def _sandbox_path(name: Any, field: str, errors: list[Any]) -> bool:
    """``name`` is a path a run may write or read (else a 422 entry)."""
    problem = path_problem(name) if isinstance(name, str) else "not a path"
    if problem is not None:
        errors.append(_error("value_error", field, f"Value error, {name!r}: {problem}", name))
        return False
    return True


def absolute_paths_refused(run: Mapping[str, Any], isolation: str) -> str | None:
    """Why a run's absolute paths cannot be served under ``isolation``, or
    None. Only a namespaced clone has a root of its own (its private root):
    there an absolute path is written and read at that path as the program
    sees it. Under process isolation ``/`` is the host's own file system,
    which no request may write or read: refused (SandboxError) rather than
    mapped somewhere the program would not find it."""
    names = [n for n in [*run["files"], *run["fetch_files"]] if n.startswith("/")]
    if not names or isolation == "namespaces":
        return None
    return (
        f"absolute paths in files/fetch_files ({', '.join(map(repr, names[:3]))}) need a "
        f"sandbox with a root of its own (namespaces isolation); this backend runs with "
        f"{isolation} isolation, where / is the host's file system: refused"
    )


def validate_run_code(body: Any) -> dict[str, Any]:
    """A ``/run_code`` body with SandboxFusion's defaults filled in, or
    :class:`_Invalid` with every problem found (``loc``, ``msg``)."""
    if not isinstance(body, Mapping):
        raise _Invalid([_error("model_attributes_type", "", "Input should be an object", body)])
    errors: list[dict[str, Any]] = []
    msg = "Input should be a valid string"
    code = _required(body, "code", errors, _is_text, "string_type", msg)
    language = body.get("language")
    if "language" not in body:
        errors.append(_error("missing", "language", "Field required", dict(body)))
    elif language not in LANGUAGES:
        expected = ", ".join(f"'{name}'" for name in LANGUAGES)
        errors.append(
            _error(
                "literal_error",
                "language",
                f"Input should be {expected}",
                language,
                expected=expected,
            )
        )
    stdin = body.get("stdin")
    if stdin is not None and not isinstance(stdin, str):
        errors.append(_error("string_type", "stdin", "Input should be a valid string", stdin))
    compile_timeout = _number(body, "compile_timeout", 10, errors)
    run_timeout = _timeout_field(body, "run_timeout", 10, errors)
    # SandboxFusion skips null contents and names marked IGNORE_THIS_FILE
    common = _common_fields(body, errors, skip_ignored=True)
    if errors:
        raise _Invalid(errors)
    return {
        "code": code,
        "language": language,
        "stdin": stdin,
        "compile_timeout": compile_timeout,
        "run_timeout": run_timeout,
        **common,
    }


def _is_text(value: Any) -> bool:
    return isinstance(value, str)


def _is_texts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _required(
    body: Mapping[str, Any],
    key: str,
    errors: list[dict[str, Any]],
    accepts: Callable[[Any], bool],
    kind: str,
    msg: str,
) -> Any:
    """A field the request must have, as given (its error noted when it is
    missing or ``accepts`` refuses it)."""
    value = body.get(key)
    if key not in body:
        errors.append(_error("missing", key, "Field required", dict(body)))
    elif not accepts(value):
        errors.append(_error(kind, key, msg, value))
    return value


def _timeout_field(
    body: Mapping[str, Any], key: str, default: float, errors: list[dict[str, Any]]
) -> float:
    """A request's timeout in seconds: above 0, and within what one exec may take."""
    seconds = _number(body, key, default, errors)
    bound = MAX_EXEC_TIMEOUT_S - EXEC_MARGIN_S
    if not 0 < seconds <= bound:
        msg = f"Value error, {key} must be in (0, {bound}]"
        errors.append(_error("value_error", key, msg, seconds))
    return seconds


def _common_fields(
    body: Mapping[str, Any], errors: list[dict[str, Any]], *, skip_ignored: bool
) -> dict[str, Any]:
    """What ``/run_code`` and ``/run_jupyter`` both take: the memory
    limit, ``files`` and ``fetch_files``."""
    return {
        "memory_limit_MB": _memory_field(body, errors),
        "files": _files_field(body, errors, skip_ignored=skip_ignored),
        "fetch_files": _fetch_field(body, errors),
    }


def _memory_field(body: Mapping[str, Any], errors: list[dict[str, Any]]) -> int:
    """``memory_limit_MB`` (-1, no limit, when absent or not an integer)."""
    memory = body.get("memory_limit_MB", -1)
    if isinstance(memory, bool) or not isinstance(memory, int):
        msg = "Input should be a valid integer"
        errors.append(_error("int_type", "memory_limit_MB", msg, memory))
        return -1
    return memory


def _files_field(
    body: Mapping[str, Any], errors: list[dict[str, Any]], *, skip_ignored: bool
) -> dict[str, str]:
    """``files``: each path the sandbox takes, its content base64;
    ``skip_ignored``: null contents and names marked ``IGNORE_THIS_FILE``
    left out, as SandboxFusion's ``/run_code`` does."""
    files: dict[str, str] = {}
    raw_files = body.get("files", {})
    if not isinstance(raw_files, Mapping):
        errors.append(_error("dict_type", "files", "Input should be a valid dictionary", raw_files))
        return files
    for name, content in raw_files.items():
        if skip_ignored and (content is None or "IGNORE_THIS_FILE" in name):
            continue
        if not _sandbox_path(name, "files", errors):
            continue
        try:
            if not isinstance(content, str):
                raise ValueError
            base64.b64decode(content, validate=True)
        except (ValueError, binascii.Error):
            errors.append(
                _error("value_error", "files", f"Value error, {name}: not base64", content)
            )
            continue
        files[name] = content
    return files


def _fetch_field(body: Mapping[str, Any], errors: list[dict[str, Any]]) -> list[str]:
    """``fetch_files``: the paths the sandbox takes."""
    fetch = body.get("fetch_files", [])
    if not isinstance(fetch, list) or not all(isinstance(n, str) for n in fetch):
        errors.append(_error("list_type", "fetch_files", "Input should be a list of paths", fetch))
        return []
    return [n for n in fetch if _sandbox_path(n, "fetch_files", errors)]


def _answer(
    status: str,
    message: str = "",
    run_result: dict[str, Any] | None = None,
    files: dict[str, str] | None = None,
    compile_result: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "status": status,
        "message": message,
        "compile_result": compile_result,
        "run_result": run_result,
        "executor_pod_name": None,
        "files": files or {},
    }


def sandbox_error(message: str) -> dict[str, Any]:
    """SandboxFusion's answer for a run the sandbox itself could not do."""
    return _answer("SandboxError", message)


def _text(b64: str) -> str:
    return base64.b64decode(b64).decode("utf-8", errors="replace")


def response_from_output(output: str, exit_code: int) -> dict[str, Any]:
    """The ``/run_code`` answer from the runner exec's output and exit code.

    Only lines starting with the runner's marker are read. No ``started``
    line: the runner never got to run the code (the backend's failure,
    ``SandboxError``). ``started`` without ``done``: the code's process
    stopped or killed its runner, which is the run failing (``Failed``)."""
    records: dict[str, dict[str, Any]] = {}
    for record in marked_records(output, _MARK):
        if isinstance(record.get("phase"), str):
            records.setdefault(record["phase"], record)
    if "started" not in records:
        refused = records.get("refused")
        if refused is not None:  # the request's files could not be written
            return sandbox_error(str(refused.get("message", "the run could not be set up")))
        tail = output.strip()[-500:]
        return sandbox_error(f"the run could not be started (exit {exit_code}): {tail}")
    done = records.get("done")
    if done is None:
        timed_out = exit_code == -1
        return _answer(
            "Failed",
            run_result={
                "status": "TimeLimitExceeded" if timed_out else "Finished",
                "execution_time": None,
                "return_code": None if timed_out else exit_code,
                "stdout": "",
                "stderr": "the run ended without its report: its runner was stopped or killed",
            },
        )
    timed_out = bool(done["timed_out"])
    return_code = done["return_code"]
    run_result = {
        "status": "TimeLimitExceeded" if timed_out else "Finished",
        "execution_time": done["execution_time"],
        "return_code": return_code,
        "stdout": _text(done["stdout"]),
        "stderr": _text(done["stderr"]),
    }
    ok = not timed_out and return_code == 0
    return _answer("Success" if ok else "Failed", run_result=run_result, files=done["files"])


def _compile_result(build: Build) -> dict[str, Any]:
    return {
        "status": "TimeLimitExceeded" if build.verdict == "time_limit" else "Finished",
        "execution_time": build.wall,
        "return_code": None if build.verdict == "time_limit" else build.return_code,
        "stdout": "",
        "stderr": _text(build.output),
    }


_LIMIT_NOTES: Final = {
    "memory_limit": "memory limit exceeded",
    "output_limit": "output limit exceeded",
    "time_limit": "time limit exceeded",
}


def _run_result(record: RunRecord) -> dict[str, Any]:
    """SandboxFusion's ``run_result``: a run killed by a signal returns
    128 + its number, as the shell SandboxFusion runs programs with does."""
    code = record.return_code
    if code is None or code < 0:
        code = 128 + (record.signal or 9)
    stderr = record.stderr.decode("utf-8", errors="replace")
    if record.limit in _LIMIT_NOTES:
        stderr += f"\n{_LIMIT_NOTES[record.limit]} (peak memory {record.peak_rss >> 20} MiB)\n"
    timed_out = record.limit == "time_limit"
    return {
        "status": "TimeLimitExceeded" if timed_out else "Finished",
        "execution_time": record.wall,
        "return_code": None if timed_out else code,
        "stdout": record.stdout.decode("utf-8", errors="replace"),
        "stderr": stderr,
    }


#: A go_test whose build took all of its run_timeout (see answer_compiled).
_GO_TEST_BUILD_TIMEOUT: Final = {
    "status": "TimeLimitExceeded",
    "execution_time": None,
    "return_code": None,
    "stdout": "",
    "stderr": "go test: building the test binary took the whole run_timeout\n",
}


def with_runtime(tc: Toolchain, files: Mapping[str, str]) -> Toolchain:
    """``tc`` with what SandboxFusion's runtime gives its language beyond the
    compiler: Java compiles and runs with javatuples (its image ships
    ``javatuples-1.2.jar``; here Debian's ``libjavatuples-java``) and the
    request's own ``.jar`` files on the class path, as its java runner does.
    Its other languages' extras (its python image's packages, lodash for
    node, testify for go, luaunit) are the host's to install, see
    ``docs/languages.md``."""
    if tc.language != "java" or tc.compile is None:
        return tc
    jars = [JAVATUPLES_JAR] if os.path.isfile(JAVATUPLES_JAR) else []
    jars += sorted(name for name in files if name.endswith(".jar"))
    if not jars:
        return tc
    path = ":".join(jars)
    compile_: list[str] = []
    for arg in tc.compile:
        compile_ += ["-cp", path, arg] if arg == "{src}" else [arg]
    run = tuple(f"{arg}:{path}" if arg == "{build}" else arg for arg in tc.run)
    return replace(tc, compile=tuple(compile_), run=run)


async def answer_compiled(languages: LanguageRuns, run: dict[str, Any]) -> dict[str, Any]:
    """A ``/run_code`` in a language other than python: compiled once per
    distinct program (the server's compile cache), then run."""
    try:
        found = with_main_class(
            with_runtime(await languages.toolchain(run["language"]), run["files"]), run["code"]
        )
        if found is None:  # SandboxFusion's answer to a Scala program with no object
            error = {"status": "Error", "execution_time": None, "return_code": 1,
                     "stdout": None, "stderr": NO_OBJECT}  # fmt: skip
            return _answer("Failed", compile_result=error)
        tc = found
        code, files = run["code"], run["files"]
        if tc.language == "junit":  # (javac wants the public class's name)
            tc = replace(tc, source=junit_source(code))
        if tc.language == "csharp":  # .NET's implicit usings and Debug.Assert
            tc, code, files = sandbox_fusion_program(tc, code, files)
        from_source = run["language"] in _RUN_FROM_SOURCE
        compile_s = run["compile_timeout"]
        if from_source:  # (SandboxFusion has no compile step to time here)
            compile_s = max(compile_s, run["run_timeout"])
        build = await languages.build(tc, code, files, compile_s)
        compiled = _compile_result(build) if tc.compiled else None
        if from_source:  # its compile is part of its run there
            compiled = None
            if build.verdict != "ok":
                return _answer("Failed", run_result=_compile_result(build))
        if build.verdict != "ok":
            return _answer("Failed", compile_result=compiled)
        limit = run["run_timeout"]
        if tc.language == "go_test":
            # SandboxFusion's go test builds the test binary within
            # run_timeout: the run gets what its build's CPU time left
            limit -= build.cpu
            if limit <= 0:
                return _answer("Failed", run_result=_GO_TEST_BUILD_TIMEOUT, compile_result=compiled)
        memory = run["memory_limit_MB"]
        (record,) = await languages.run(
            tc,
            build,
            code,
            [(run["stdin"] or "").encode()],
            cpu_limit=limit,
            memory_bytes=memory << 20 if memory > 0 else 0,
            output_bytes=_OUTPUT_CAP,
            files=run["files"],
            fetch_files=run["fetch_files"],
            own_time=True,
        )
    except (LanguageUnavailable, LanguageInfraError) as exc:
        return sandbox_error(str(exc))
    result = _run_result(record)
    ok = result["status"] == "Finished" and result["return_code"] == 0
    return _answer(
        "Success" if ok else "Failed",
        run_result=result,
        files=dict(record.files),
        compile_result=compiled,
    )


def python_template(service: BackendService, preferred: str | None) -> str | None:
    """The template python runs in: ``preferred``, else ``py``, else the first
    python template the server has."""
    for tid in (preferred, "py", "dkr-python311"):
        if tid is not None and tid in service.templates:
            return tid
    for tid, spec in sorted(service.templates.items()):
        if spec.kind == "python":
            return tid
    return None


async def _exec_waiting_for_capacity(
    service: BackendService, body: dict[str, Any]
) -> dict[str, Any]:
    """``exec_once``, waiting out ``at_capacity`` (refused before any work,
    so trying again is safe) instead of answering 503."""
    while True:
        try:
            return await service.exec_once(body)
        except WireError as err:
            if err.error_code != "at_capacity":
                raise
        await asyncio.sleep(_CAPACITY_RETRY_S)


def _fastapi_error(err: WireError) -> dict[str, Any]:
    return {"detail": err.message}


#: The name the jupyter runner is loaded as in the guest.
JUPYTER_MODULE: Final = "collimate_jupyter_runner"
_JUPYTER_MARK: Final = "\x1ecollimate-jupyter "


def validate_run_jupyter(body: Any) -> dict[str, Any]:
    """A ``/run_jupyter`` body (SandboxFusion's ``RunJupyterRequest``) with
    its defaults filled in, or :class:`_Invalid` with every problem found."""
    if not isinstance(body, Mapping):
        raise _Invalid([_error("model_attributes_type", "", "Input should be an object", body)])
    errors: list[dict[str, Any]] = []
    msg = "Input should be a list of strings"
    cells = _required(body, "cells", errors, _is_texts, "list_type", msg)
    cell_timeout = _number(body, "cell_timeout", 0, errors)
    total_timeout = _timeout_field(body, "total_timeout", 45, errors)
    if cell_timeout < 0:
        msg = "Value error, cell_timeout must not be negative"
        errors.append(_error("value_error", "cell_timeout", msg, cell_timeout))
    kernel = body.get("kernel", "python3")
    if kernel != "python3":
        msg = "Input should be 'python3'"
        errors.append(_error("literal_error", "kernel", msg, kernel, expected="'python3'"))
    common = _common_fields(body, errors, skip_ignored=False)
    if errors:
        raise _Invalid(errors)
    return {
        "cells": cells,
        "cell_timeout": cell_timeout,
        "total_timeout": total_timeout,
        **common,
    }


def jupyter_exec_code(blob: str) -> str:
    """The exec's code for one ``/run_jupyter``: the jupyter runner, then the request."""
    return f"{loader_block('jupyter_runner', JUPYTER_MODULE)}_m._jupyter_main({blob!r})\n"


def _jupyter_answer(
    status: str,
    message: str = "",
    driver: dict[str, Any] | None = None,
    cells: list[dict[str, Any]] | None = None,
    files: dict[str, str] | None = None,
) -> dict[str, Any]:
    return {
        "status": status,
        "message": message,
        "driver": driver,
        "cells": cells or [],
        "executor_pod_name": None,
        "files": files or {},
    }


def _jupyter_refused(message: str) -> dict[str, Any]:
    return _jupyter_answer("SandboxError", message)


def jupyter_response(output: str, exit_code: int) -> dict[str, Any]:
    """The ``/run_jupyter`` answer from the runner exec's output, as
    SandboxFusion shapes it: ``Success`` with every cell's ``stdout``,
    ``stderr``, ``display`` and ``error``; ``Failed`` with no cells when
    the cells ran past ``total_timeout`` or the kernel died before the last
    (its driver says which); ``SandboxError`` when the runner never got to
    start them."""
    records: dict[str, dict[str, Any]] = {}
    for record in marked_records(output, _JUPYTER_MARK):
        if isinstance(record.get("phase"), str):
            records.setdefault(record["phase"], record)
    if "started" not in records:
        refused = records.get("refused")
        if refused is not None:
            return _jupyter_answer("SandboxError", str(refused.get("message", "")))
        tail = output.strip()[-500:]
        return _jupyter_answer(
            "SandboxError", f"the cells could not be started (exit {exit_code}): {tail}"
        )
    done = records.get("done")
    if done is None:
        driver = {"status": "Finished", "execution_time": None, "return_code": exit_code,
                  "stdout": "", "stderr": "the run ended without its report"}  # fmt: skip
        return _jupyter_answer("Failed", driver=driver)
    timed_out = bool(done["timed_out"])
    cells = list(done["cells"])
    driver = {
        "status": "TimeLimitExceeded" if timed_out else "Finished",
        "execution_time": done["execution_time"],
        "return_code": None if timed_out else done["return_code"],
        "stdout": "",
        "stderr": "",
    }
    if timed_out:
        driver["stderr"] = "the cells ran past total_timeout\n"
        return _jupyter_answer("Failed", driver=driver)
    if not done["all_cells"]:
        driver["stderr"] = (
            f"the kernel died during cell {len(cells) + 1} (or flooded its results pipe)\n"
        )
        return _jupyter_answer("Failed", driver=driver)
    return _jupyter_answer("Success", driver=driver, cells=cells, files=done["files"])


def build_sandbox_fusion_router(
    service: BackendService, *, template_id: str | None = None
) -> Router:
    """``POST /run_code``, ``POST /run_jupyter`` and ``GET /v1/ping`` over
    ``service``; python (and jupyter's cells) runs in ``template_id``
    (default: see :func:`python_template`)."""
    router = Router("sandbox-fusion", _fastapi_error)

    def validated(
        req: Request, validate: Callable[[Any], dict[str, Any]]
    ) -> dict[str, Any] | Response:
        """The request's body, checked as SandboxFusion's pydantic model
        checks it, or its 422."""
        try:
            body = json.loads(req.body) if req.body.strip() else None
        except (ValueError, UnicodeDecodeError) as exc:
            detail = [{"type": "json_invalid", "loc": ["body"], "msg": "JSON decode error",
                       "input": {}, "ctx": {"error": str(exc)}}]  # fmt: skip
            return Response(422, {"detail": detail})
        try:
            return validate(body)
        except _Invalid as bad:
            return Response(422, {"detail": bad.errors})

    async def in_python(
        run: dict[str, Any],
        code_of: Callable[[str], str],
        seconds: float,
        refused: Callable[[str], dict[str, Any]],
        answer: Callable[[str, int], dict[str, Any]],
    ) -> Response:
        """``run`` by its guest runner (``code_of`` the request's blob) in
        one exec of the python template, at most ``seconds``; what the
        sandbox could not do is ``refused``'s answer (a draining node's is
        a 503, so that a client goes elsewhere)."""
        template = python_template(service, template_id)
        if template is None:
            return Response(200, refused("this backend has no python template"))
        blob = base64.b64encode(json.dumps(run).encode()).decode()
        exec_body = {
            "template_id": template,
            "code": code_of(blob),
            "timeout_seconds": min(MAX_EXEC_TIMEOUT_S, math.ceil(seconds) + EXEC_MARGIN_S),
        }
        try:
            result = await _exec_waiting_for_capacity(service, exec_body)
        except WireError as err:
            if err.error_code == "draining":
                raise
            return Response(200, refused(f"{err.error_code}: {err.message}"))
        return Response(200, answer(result["stdout"], result["exit_code"]))

    async def run_code(req: Request, _p: dict[str, str]) -> Response:
        run = validated(req, validate_run_code)
        if isinstance(run, Response):
            return run
        if run["language"] not in RUNNABLE_LANGUAGES and resolve_language(run["language"]) is None:
            return Response(
                200,
                sandbox_error(
                    f"language {run['language']!r} is not available on this backend "
                    f"(it runs {', '.join(RUNNABLE_LANGUAGES)})"
                ),
            )
        refused = absolute_paths_refused(run, service.engine.isolation)
        if refused is not None:
            return Response(200, sandbox_error(refused))
        if run["language"] != "python":
            return Response(200, await answer_compiled(service.languages, run))
        return await in_python(
            run, exec_code, run["run_timeout"], sandbox_error, response_from_output
        )

    async def run_jupyter(req: Request, _p: dict[str, str]) -> Response:
        run = validated(req, validate_run_jupyter)
        if isinstance(run, Response):
            return run
        refused = absolute_paths_refused(run, service.engine.isolation)
        if refused is not None:
            return Response(200, _jupyter_refused(refused))
        return await in_python(
            run, jupyter_exec_code, run["total_timeout"], _jupyter_refused, jupyter_response
        )

    async def ping(_req: Request, _p: dict[str, str]) -> Response:
        return Response(200, "pong")

    router.add("POST", "/run_code", run_code)
    router.add("POST", "/run_jupyter", run_jupyter)
    router.add("GET", "/v1/ping", ping)
    return router
