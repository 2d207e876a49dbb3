"""``POST /v1/judge``: a group of programs judged like a contest.

The body names the problems (their tests, limits, how outputs compare, an
optional checker) and the candidates (each a source for one problem)::

    {"problems": [{"language": "cpp", "tests": [{"input": "1 2\\n", "output": "3\\n"}],
                   "time_limit": 2, "memory_limit_mb": 256, "compare": "tokens",
                   "checker": null, "scoring": "fraction"}],
     "candidates": [{"problem": 0, "source": "..."}]}

Each distinct source is compiled once (the server's compile cache: a group
of identical candidates, or the same candidate resubmitted, costs one
compile), compiles run side by side up to the run slots, and each
candidate's tests run in an exec of its own (a clone per candidate: what a
candidate does cannot reach its siblings), one fresh process per test with
only that test's input.

The expected outputs never enter a sandbox: outputs are compared here, in
the server, after the program's processes are gone. A checker (for
problems with many right answers) runs sandboxed too, in an exec of its
own, given the input, the program's output and the expected answer as
files: testlib's protocol (``checker input output answer``: exit 0
accepted, 1 wrong answer, 2 presentation error, 7 points with the score on
its output) or open-r1's (``checker input answer output``, accepted when it
prints ``1`` or ``100``). A checker that fails (crashes, exits 3, answers
nonsense) on a program's output is given the expected answer as the
output: if it accepts that, the program's output is what broke it, and the
test is the program's ``wrong_answer``; if it fails on the answer too, the
checker is broken: the candidate gets an infra error, never a 0.0.

Verdicts per test: ``accepted``, ``wrong_answer``, ``runtime_error``,
``time_limit``, ``memory_limit``, ``output_limit``; ``compile_error`` for
every test of a program that did not compile (a compile out of CPU time
included). The reward is the fraction of tests accepted, or 1.0 only if
all are (``scoring: "all"``); then the tests after the first failed one
are not run (``skipped``): none of them could change the 0.0.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from .compile_cache import Build
from .jvm_languages import NO_OBJECT, with_main_class
from .language_runs import (
    LanguageInfraError,
    LanguageRuns,
    LanguageUnavailable,
    RunInput,
    RunRecord,
)
from .program_harness import (
    PROGRAM_LANGUAGES,
    ProgramRejected,
    ProgramUnusable,
    assemble,
    failed_by_output,
    new_token,
    run_passed,
)
from .toolchains import Toolchain, judged_language, resolve_language
from .wire_errors import bad_request

__all__ = ["COMPARES", "JudgeProblem", "compare_output", "judge_body", "parse_judge_body"]

#: How a program's output is compared with the expected one.
COMPARES: Final = ("exact", "lines", "tokens", "float")
#: Limits a request may ask for.
MAX_TIME_LIMIT_S: Final = 60.0
MAX_MEMORY_MB: Final = 4096
MAX_TESTS: Final = 1000
MAX_CANDIDATES: Final = 512
#: Bytes a run may print (past it: ``output_limit``). Outputs compared
#: exactly, by lines or by tokens are compared by their digests (taken in
#: the clone once the program is gone), so only their start comes back.
OUTPUT_LIMIT: Final = 64 * 1024 * 1024
#: What comes back of each such output (for the detail of a wrong answer).
OUTPUT_SHOWN: Final = 4096
#: Bytes a run may print when its output itself must come back (a checker
#: reads it; floats are compared one by one).
OUTPUT_LIMIT_READ: Final = 8 * 1024 * 1024
#: CPU seconds a compile may use.
COMPILE_CPU_S: Final = 30.0
#: CPU seconds a checker may use on one test.
CHECKER_CPU_S: Final = 10.0
#: Checker protocols.
CHECKERS: Final = ("testlib", "openr1")
_NUMBER: Final = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


@dataclass(frozen=True)
class Checker:
    protocol: str
    language: str
    source: str


@dataclass(frozen=True)
class ProgramTests:
    """A dataset's test program, run after the candidate's code (MultiPL-E,
    HumanEval-X, MBXP): see :mod:`.program_harness`."""

    tests: str
    prompt: str | None
    typecheck: bool


@dataclass(frozen=True)
class JudgeProblem:
    language: str
    inputs: tuple[bytes, ...]
    outputs: tuple[bytes, ...]
    time_limit: float
    memory_limit_mb: int
    compare: str
    float_tol: float
    scoring: str
    checker: Checker | None
    program: ProgramTests | None = None


def _text(value: Any, what: str) -> bytes:
    if not isinstance(value, str):
        raise bad_request(f"{what} must be a string")
    return value.encode("utf-8", "surrogatepass")


def _number(raw: Mapping[str, Any], key: str, default: float, top: float, what: str) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise bad_request(f"{what}.{key} must be a number")
    if not 0 < value <= top:
        raise bad_request(f"{what}.{key} must be in (0, {top:g}]")
    return float(value)


def _memory(raw: Mapping[str, Any], what: str) -> int:
    memory = raw.get("memory_limit_mb", 256)
    if isinstance(memory, bool) or not isinstance(memory, int) or not 0 < memory <= MAX_MEMORY_MB:
        raise bad_request(f"{what}.memory_limit_mb must be an integer in (0, {MAX_MEMORY_MB}]")
    return memory


def _checker(raw: Any, what: str) -> Checker | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise bad_request(f"{what}.checker must be an object or null")
    protocol = raw.get("protocol", "testlib")
    if protocol not in CHECKERS:
        raise bad_request(f"{what}.checker.protocol must be one of {list(CHECKERS)}")
    language = raw.get("language", "cpp")
    if not isinstance(language, str) or judged_language(language) is None:
        raise bad_request(f"{what}.checker.language: unknown language {language!r}")
    source = raw.get("source")
    if not isinstance(source, str) or not source.strip():
        raise bad_request(f"{what}.checker.source must be the checker's source")
    return Checker(protocol, language, source)


def _program(raw: Any, what: str, language: str) -> ProgramTests:
    if not isinstance(raw, Mapping):
        raise bad_request(f"{what}.program must be an object with tests")
    unknown = sorted(set(raw) - {"tests", "prompt", "typecheck"})
    if unknown:
        raise bad_request(f"unknown field(s) {unknown} in {what}.program")
    tests, prompt, typecheck = raw.get("tests"), raw.get("prompt"), raw.get("typecheck", True)
    if not isinstance(tests, str) or not tests.strip():
        raise bad_request(f"{what}.program.tests must be the test program's source")
    if prompt is not None and not isinstance(prompt, str):
        raise bad_request(f"{what}.program.prompt must be a string or null")
    if not isinstance(typecheck, bool):
        raise bad_request(f"{what}.program.typecheck must be true or false")
    if resolve_language(language) not in PROGRAM_LANGUAGES:
        raise bad_request(
            f"{what}.program: test programs run in {list(PROGRAM_LANGUAGES)}, not {language!r}"
        )
    return ProgramTests(tests, prompt or None, typecheck)


def _problem(raw: Any, i: int) -> JudgeProblem:
    what = f"problems[{i}]"
    if not isinstance(raw, Mapping):
        raise bad_request(f"{what} must be an object")
    language = raw.get("language")
    auto = language == "auto" and raw.get("program") is None
    if not isinstance(language, str) or (judged_language(language) is None and not auto):
        raise bad_request(f"{what}.language: unknown language {language!r}")
    if raw.get("program") is not None:
        if raw.get("tests") is not None or raw.get("checker") is not None:
            raise bad_request(f"{what}: a test program takes no tests or checker")
        return JudgeProblem(
            language=language,
            inputs=(b"",),
            outputs=(b"",),
            time_limit=_number(raw, "time_limit", 10.0, MAX_TIME_LIMIT_S, what),
            memory_limit_mb=_memory(raw, what),
            compare="exact",
            float_tol=0.0,
            scoring="all",
            checker=None,
            program=_program(raw["program"], what, language),
        )
    tests = raw.get("tests")
    if not isinstance(tests, list) or not tests:
        raise bad_request(f"{what}.tests must be a non-empty list of {{input, output}}")
    if len(tests) > MAX_TESTS:
        raise bad_request(f"{what}: at most {MAX_TESTS} tests")
    inputs, outputs = [], []
    for j, test in enumerate(tests):
        if not isinstance(test, Mapping):
            raise bad_request(f"{what}.tests[{j}] must be an object with input and output")
        inputs.append(_text(test.get("input", ""), f"{what}.tests[{j}].input"))
        outputs.append(_text(test.get("output"), f"{what}.tests[{j}].output"))
    compare = raw.get("compare", "tokens")
    if compare not in COMPARES:
        raise bad_request(f"{what}.compare must be one of {list(COMPARES)}")
    scoring = raw.get("scoring", "fraction")
    if scoring not in ("fraction", "all"):
        raise bad_request(f"{what}.scoring must be 'fraction' or 'all'")
    memory = _memory(raw, what)
    return JudgeProblem(
        language=language,
        inputs=tuple(inputs),
        outputs=tuple(outputs),
        time_limit=_number(raw, "time_limit", 2.0, MAX_TIME_LIMIT_S, what),
        memory_limit_mb=memory,
        compare=compare,
        float_tol=_number(raw, "float_tol", 1e-6, 1.0, what),
        scoring=scoring,
        checker=_checker(raw.get("checker"), what),
    )


def parse_judge_body(body: Any) -> tuple[list[JudgeProblem], list[tuple[int, str, str]]]:
    """The problems and the candidates (problem index, source, language) of
    a body, or a 400 naming what is wrong. A candidate's ``language`` is its
    problem's unless it names its own (required when the problem's is
    ``auto``)."""
    if not isinstance(body, Mapping):
        raise bad_request("a judge request is a JSON object")
    unknown = sorted(set(body) - {"problems", "candidates"})
    if unknown:
        raise bad_request(f"unknown field(s) {unknown} in a judge request")
    problems_raw, candidates_raw = body.get("problems"), body.get("candidates")
    if not isinstance(problems_raw, list) or not problems_raw:
        raise bad_request("problems must be a non-empty list")
    if not isinstance(candidates_raw, list) or not candidates_raw:
        raise bad_request("candidates must be a non-empty list")
    if len(candidates_raw) > MAX_CANDIDATES:
        raise bad_request(f"at most {MAX_CANDIDATES} candidates a request")
    problems = [_problem(p, i) for i, p in enumerate(problems_raw)]
    candidates = []
    for i, c in enumerate(candidates_raw):
        if not isinstance(c, Mapping):
            raise bad_request(f"candidates[{i}] must be an object with problem and source")
        p = c.get("problem", 0)
        if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p < len(problems):
            raise bad_request(f"candidates[{i}].problem must index problems")
        source = c.get("source")
        if not isinstance(source, str):
            raise bad_request(f"candidates[{i}].source must be a string")
        language = c.get("language", problems[p].language)
        if not isinstance(language, str) or judged_language(language) is None:
            raise bad_request(
                f"candidates[{i}].language: unknown language {language!r}"
                + (" (its problem's language is auto)" if language == "auto" else "")
            )
        if problems[p].program is not None and language != problems[p].language:
            raise bad_request(f"candidates[{i}].language: a test program's is its problem's")
        candidates.append((p, source, language))
    return problems, candidates


# -- comparing ----------------------------------------------------------------


def _lines(data: bytes) -> list[bytes]:
    lines = [line.rstrip() for line in data.replace(b"\r\n", b"\n").split(b"\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _float_equal(a: bytes, b: bytes, tol: float) -> bool:
    if a == b:
        return True
    sa, sb = a.decode("ascii", "replace"), b.decode("ascii", "replace")
    if not (_NUMBER.match(sa) and _NUMBER.match(sb)):
        return False
    x, y = float(sa), float(sb)
    return math.isfinite(x) and abs(x - y) <= tol * max(1.0, abs(y))


def compare_output(got: bytes, expected: bytes, how: str, tol: float = 1e-6) -> bool:
    """``exact``: byte for byte; ``lines``: line by line, trailing spaces
    and trailing empty lines ignored; ``tokens``: the same words (any
    whitespace between), as most contest checkers compare; ``float``:
    tokens, numbers equal within ``tol`` (absolute, or relative to the
    expected value when it is above 1)."""
    if how == "exact":
        return got == expected
    if how == "lines":
        return _lines(got) == _lines(expected)
    a, b = got.split(), expected.split()
    if how == "tokens":
        return a == b
    return len(a) == len(b) and all(_float_equal(x, y, tol) for x, y in zip(a, b, strict=True))


def normal_lines(data: bytes) -> bytes:
    """Output as ``lines`` compares it (``language_runner.normal_lines``
    digests the program's output by the same rule)."""
    return b"\n".join(_lines(data))


def expected_digest(expected: bytes, how: str) -> str:
    """The digest the runner takes of a run's output, of the expected one."""
    if how == "lines":
        data = normal_lines(expected)
    elif how == "tokens":
        data = b" ".join(expected.split())
    else:
        data = expected
    return hashlib.sha256(data).hexdigest()


def _matches(record: RunRecord, expected: bytes, problem: JudgeProblem) -> bool:
    if problem.compare != "float" and record.digests:
        return record.digests.get(problem.compare) == expected_digest(expected, problem.compare)
    return compare_output(record.stdout, expected, problem.compare, problem.float_tol)


# -- judging ------------------------------------------------------------------


class _JudgeFailed(Exception):
    """The judge itself failed for one candidate (its checker, say)."""


def _run_verdict(record: RunRecord) -> str | None:
    """The verdict of a run that did not end well, or None."""
    if record.limit is not None:
        return record.limit
    if record.return_code != 0:
        return "runtime_error"
    return None


async def _check(
    languages: LanguageRuns,
    problem: JudgeProblem,
    records: Sequence[RunRecord],
    pending: list[int],
) -> dict[int, tuple[str, float]]:
    """The checker's verdict (and points) on each test in ``pending``."""
    checker = problem.checker
    assert checker is not None
    found = with_main_class(await languages.toolchain(checker.language), checker.source)
    if found is None:
        raise _JudgeFailed(f"the checker did not compile: {NO_OBJECT}")
    tc = found
    build = await languages.build(tc, checker.source, {}, COMPILE_CPU_S)
    if build.verdict != "ok":
        raise _JudgeFailed(f"the checker did not compile: {_b64_text(build.output)[-300:]}")
    outputs = {i: records[i].stdout for i in pending}
    verdicts: dict[int, tuple[str, float]] = {}
    failed: dict[int, _JudgeFailed] = {}
    for i, outcome in (await _run_checker(languages, problem, tc, build, outputs)).items():
        if isinstance(outcome, _JudgeFailed):
            failed[i] = outcome
        else:
            verdicts[i] = outcome
    if failed:
        # Whose failure: the checker's on this program's output, or the
        # checker's own? Given the expected answer as the output, a working
        # checker gives a verdict (whatever it is); then what broke it was
        # the program's output (its wrong answer). One that fails on the
        # answer too is broken.
        answers = {i: problem.outputs[i] for i in failed}
        again = await _run_checker(languages, problem, tc, build, answers)
        for i, exc in failed.items():
            if isinstance(again[i], _JudgeFailed):
                raise exc
            verdicts[i] = ("wrong_answer", 0.0)
    return verdicts


async def _run_checker(
    languages: LanguageRuns,
    problem: JudgeProblem,
    tc: Toolchain,
    build: Build,
    outputs: Mapping[int, bytes],
) -> dict[int, tuple[str, float] | _JudgeFailed]:
    """The checker on each test of ``outputs`` (test -> the output it
    judges): its verdict, or how it failed."""
    checker = problem.checker
    assert checker is not None
    if checker.protocol == "testlib":  # checker input output answer
        order = ("input", "output", "answer")
    else:  # open-r1: checker input correct_output solution_output
        order = ("input", "answer", "output")
    runs = []
    for i, output in outputs.items():
        files = {
            "input": _b64(problem.inputs[i]),
            "output": _b64(output),
            "answer": _b64(problem.outputs[i]),
        }
        runs.append(RunInput(b"", files, order))
    results = await languages.run(
        tc,
        build,
        checker.source,
        runs,
        cpu_limit=CHECKER_CPU_S,
        memory_bytes=1 << 30,
        output_bytes=1 << 20,
    )
    found: dict[int, tuple[str, float] | _JudgeFailed] = {}
    for i, record in zip(outputs, results, strict=True):
        try:
            found[i] = _checker_verdict(checker.protocol, record)
        except _JudgeFailed as exc:
            found[i] = exc
    return found


def _checker_verdict(protocol: str, record: RunRecord) -> tuple[str, float]:
    if record.limit is not None:
        raise _JudgeFailed(f"the checker hit its {record.limit}")
    code = record.return_code
    said = (record.stdout + b"\n" + record.stderr).decode("utf-8", "replace").strip()
    if protocol == "openr1":
        if code != 0:
            raise _JudgeFailed(f"the checker failed (exit {code}): {said[-300:]}")
        first = record.stdout.strip().split(b"\n")[0].strip() if record.stdout.strip() else b""
        return ("accepted", 1.0) if first in (b"1", b"100") else ("wrong_answer", 0.0)
    if code == 0:
        return "accepted", 1.0
    if code in (1, 2):  # wrong answer, presentation error
        return "wrong_answer", 0.0
    if code == 7:  # points: the score is the first number testlib printed
        found = re.search(r"[-+]?\d*\.?\d+(?:[eE][-+]?\d+)?", said)
        points = float(found.group()) if found else 0.0
        if not 0.0 <= points <= 1.0:
            points = points / 100.0 if 0.0 <= points <= 100.0 else 0.0
        return ("accepted" if points >= 1.0 else "wrong_answer"), points
    raise _JudgeFailed(f"the checker failed (exit {code}): {said[-300:]}")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _b64_text(data: str) -> str:
    return base64.b64decode(data).decode("utf-8", "replace")


#: Bytes a test program may print (its output is read back whole: the
#: end-of-tests token is its last line).
PROGRAM_OUTPUT_LIMIT: Final = 4 * 1024 * 1024


async def _judge_program(
    languages: LanguageRuns, problem: JudgeProblem, tc: Toolchain, source: str
) -> dict[str, Any]:
    """One candidate with its dataset's test program (see
    :mod:`.program_harness`): accepted when the program exits 0 with the
    run's token as its last line."""
    program = problem.program
    assert program is not None
    no_compile = {"verdict": "ok", "output": "", "cpu": 0.0}
    try:
        assembly = assemble(
            tc, source, program.tests, program.prompt, typecheck=program.typecheck
        )
    except ProgramRejected as exc:
        return _summary(problem, [exc.verdict], [0.0], no_compile, [], note=str(exc))
    except ProgramUnusable as exc:
        raise _JudgeFailed(str(exc)) from exc
    tc = assembly.toolchain
    build = await languages.build(tc, assembly.source, assembly.files, COMPILE_CPU_S)
    compiled = {"verdict": build.verdict, "output": _b64_text(build.output)[-4000:],
                "cpu": build.cpu}  # fmt: skip
    if build.verdict != "ok":
        return _summary(problem, ["compile_error"], [0.0], compiled, [])
    token = new_token()
    (record,) = await languages.run(
        tc,
        build,
        assembly.source,
        [RunInput(token.encode())],
        cpu_limit=problem.time_limit,
        memory_bytes=problem.memory_limit_mb << 20,
        output_bytes=PROGRAM_OUTPUT_LIMIT,
    )
    ended, shown = run_passed(record.stdout, token)
    record = dataclasses.replace(record, stdout=shown)
    verdict = _run_verdict(record)
    note = None
    if verdict is None:
        verdict = "accepted" if ended else "wrong_answer"
        if not ended:
            note = "the program exited 0 before its tests ended"
        elif failed_by_output(tc.language, record.stdout, record.stderr):
            note = "its output says its tests failed (Perl: ERROR; Racket: anything on stderr)"
            verdict = "wrong_answer"
    return _summary(
        problem, [verdict], [1.0 if verdict == "accepted" else 0.0], compiled, [record], note=note
    )


async def _judge_one(
    languages: LanguageRuns, problem: JudgeProblem, tc: Toolchain, source: str
) -> dict[str, Any]:
    if problem.program is not None:
        return await _judge_program(languages, problem, tc, source)
    total = len(problem.inputs)
    runs = with_main_class(tc, source)
    if runs is None:  # a Scala program with no object to run
        compiled = {"verdict": "error", "output": NO_OBJECT, "cpu": 0.0}
        return _summary(problem, ["compile_error"] * total, [0.0] * total, compiled, [])
    tc = runs
    build = await languages.build(tc, source, {}, COMPILE_CPU_S)
    compiled = {"verdict": build.verdict, "output": _b64_text(build.output)[-4000:],
                "cpu": build.cpu}  # fmt: skip
    if build.verdict != "ok":
        return _summary(problem, ["compile_error"] * total, [0.0] * total, compiled, [])
    reads = problem.checker is not None or problem.compare == "float"
    # all or nothing: a contest judge's stop at the first failed test (what
    # the runner can compare itself, by digest, or a run that ended badly)
    expect = None if reads else [expected_digest(o, problem.compare) for o in problem.outputs]
    records = await languages.run(
        tc,
        build,
        source,
        problem.inputs,
        cpu_limit=problem.time_limit,
        memory_bytes=problem.memory_limit_mb << 20,
        output_bytes=OUTPUT_LIMIT_READ if reads else OUTPUT_LIMIT,
        return_stdout=None if reads else OUTPUT_SHOWN,
        stop_after_failure=problem.scoring == "all",
        expect=expect,
        compare=problem.compare,
    )
    verdicts: list[str] = []
    points: list[float] = []
    to_check: list[int] = []
    for i, record in enumerate(records):
        bad = _run_verdict(record)
        if bad is not None:
            verdicts.append(bad)
            points.append(0.0)
        elif problem.checker is not None:
            verdicts.append("")
            points.append(0.0)
            to_check.append(i)
        else:
            ok = _matches(record, problem.outputs[i], problem)
            verdicts.append("accepted" if ok else "wrong_answer")
            points.append(1.0 if ok else 0.0)
    if to_check:
        for i, (verdict, score) in (await _check(languages, problem, records, to_check)).items():
            verdicts[i], points[i] = verdict, score
    return _summary(problem, verdicts, points, compiled, records)


def _summary(
    problem: JudgeProblem,
    verdicts: list[str],
    points: list[float],
    compiled: dict[str, Any],
    records: Sequence[RunRecord],
    note: str | None = None,
) -> dict[str, Any]:
    total = len(verdicts)
    passed = sum(1 for v in verdicts if v == "accepted")
    all_or_none = 1.0 if passed == total else 0.0
    reward = all_or_none if problem.scoring == "all" else sum(points) / total
    first_bad = next((v for v in verdicts if v != "accepted"), "accepted")
    tests = []
    for i, verdict in enumerate(verdicts):
        entry: dict[str, Any] = {"verdict": verdict}
        if i < len(records):
            r = records[i]
            entry.update(cpu=round(r.cpu, 4), wall=round(r.wall, 4), peak_rss=r.peak_rss)
            if verdict == "time_limit" and r.ended_by:
                entry.update(ended_by=r.ended_by, idle=round(r.idle, 4))
            if verdict == "runtime_error":
                entry.update(return_code=r.return_code, signal=r.signal,
                             stderr=r.stderr[-500:].decode("utf-8", "replace"))  # fmt: skip
            if problem.program is not None and verdict != "accepted":
                entry.update(stdout=r.stdout[-500:].decode("utf-8", "replace"))
        if note is not None:
            entry["stderr"] = note
        tests.append(entry)
    return {
        "reward": reward,
        "verdict": first_bad,
        "passed": passed,
        "total": total,
        "compile": compiled,
        "tests": tests,
    }


async def judge_body(languages: LanguageRuns, body: Any) -> dict[str, Any]:
    """The answer to a ``/v1/judge`` body: one result per candidate, each
    ``{"reward", "verdict", "passed", "total", "compile", "tests"}`` or
    ``{"infra_error": why}``, and the compile cache's counters."""
    problems, candidates = parse_judge_body(body)
    toolchains: dict[str, Toolchain | str] = {}
    for language in {c[2] for c in candidates}:
        try:
            toolchains[language] = await languages.toolchain(language)
        except LanguageUnavailable as exc:
            toolchains[language] = str(exc)

    async def one(p: int, source: str, language: str) -> dict[str, Any]:
        problem = problems[p]
        tc = toolchains[language]
        if isinstance(tc, str):
            return {"infra_error": tc}
        try:
            return await _judge_one(languages, problem, tc, source)
        except (LanguageInfraError, LanguageUnavailable, _JudgeFailed) as exc:
            return {"infra_error": str(exc)}

    results = await asyncio.gather(*(one(p, s, lang) for p, s, lang in candidates))
    return {"results": list(results), "compile_cache": languages.cache.describe()}
