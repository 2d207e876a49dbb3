"""The reward kinds, as the grader runs them (``_grade_<kind>``, looked up
by name). Each gets the spec's public config, its sealed data (what decides
the reward, never sent to the candidate's process), a ``fork`` that starts
the candidate's process, and the candidate's time budget.

* value kinds (``unit``, ``call``, ``property``): the candidate's process
  gets the inputs only, runs the calls and sends back plain values; the
  grader compares them with the expected ones;
* program kinds (``stdio``, ``stdin_stdout``): the process gets the inputs,
  runs the program on each and sends back its output;
* code kinds (``assert``, ``pytest``): the tests run here, in the grader,
  and every call of the candidate's code crosses to its process
  (:mod:`.remote`).
"""

# The guest may run Python 3.8 with nothing imported beyond its preload:
# no zip(strict=), no contextlib, and %-formatting is as good as any.
# ruff: noqa: UP031, SIM105, SIM102
from __future__ import annotations

import os
import sys

from .budget import _MSG, _Abort, _Budget, _Results, _Tally
from .code_tests import _attempt, _run_test, _test_code_failed
from .compare import _judge, same, same_tokens
from .remote import _Conn, _failure_of, _Gone
from .stand_ins import _Session
from .wire import checksum

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - typing only, never imported in the guest
    from collections.abc import Callable
    from typing import Any


def _read_candidate(cfg: dict[str, Any]) -> bytes | str:
    """The delivered bytes of ``cfg["path"]`` (checked against its size and
    checksum, then unlinked), or a message saying why delivery failed."""
    path = cfg["path"]
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        return "the file %s was not delivered: %s" % (path, exc)
    try:
        os.unlink(path)  # a warm session may grade thousands: leave nothing behind
    except OSError:
        pass
    if cfg.get("size") is not None:
        if len(data) != cfg["size"] or checksum(data) != cfg["crc"]:
            return "the file %s arrived altered (%d bytes, expected %d)" % (
                path,
                len(data),
                cfg["size"],
            )
    return data


def _read_sealed(spec: dict[str, Any]) -> dict[str, Any] | str:
    """The spec's sealed data (a Python literal written by the SDK), or why
    it could not be read. Read before any candidate runs, and unlinked."""
    sealed = spec.get("sealed")
    if sealed is None:
        return {}
    data = _read_candidate(sealed)
    if isinstance(data, str):
        return data
    try:
        value = eval(  # the SDK's own literal, checked byte for byte above
            compile(data, "<sealed>", "eval", dont_inherit=True),
            {"__builtins__": {"float": float}},
        )
    except Exception as exc:
        return "the sealed test data does not parse: %s" % exc
    if not isinstance(value, dict):
        return "the sealed test data is not a dict"
    return value


def _load_error(tally: _Tally, message: str) -> dict[str, Any]:
    if message.startswith("environment"):
        return {"reward": 0.0, "environment_error": message}
    verdict = tally.verdict()
    verdict["load_error"] = message[: _MSG * 2]
    verdict["timeout"] = message.startswith("timeout")
    verdict["memory_error"] = message.startswith("memory_error")
    return verdict


def _collect(conn: _Conn, budget: _Budget, requests: list[dict[str, Any]]) -> _Results:
    """Send every request at once (the candidate's process takes them in
    order: one wake-up instead of one per request), then gather the answers:
    the load's, then each check's record, until the last request says done
    (or the process ends, or the budget does). The first load error stands."""
    results = _Results()
    requests[-1]["last"] = True
    # each check timed, and the load (or the program's compile) too
    budget = budget.capped(1 + sum(len(r.get("calls", r.get("inputs", ()))) for r in requests))
    try:
        for req in requests:
            conn.send(req, budget)
        conn.settle(budget)
        for req in requests:
            while not _take(conn, req, conn.receive(budget), results):
                pass
    except _Gone as gone:
        results.missing = _failure_of(gone.why)
    except _Abort:
        conn.end("timeout")
        results.missing = ("timeout", "the exec budget ran out")
    conn.end("done")
    results.vouch(budget)
    return results


def _take(conn: _Conn, req: dict[str, Any], record: Any, results: _Results) -> bool:
    """Count one record of the candidate's process; True once it answered
    ``req`` in full. The records come from a process that runs the
    candidate's code, which can write anything on its socket: one that no
    worker sends ends the process, as garbage would (its failure: every
    check it had not reported)."""
    if type(record) is not tuple or not record:
        return _garbage(conn)
    head = record[0]
    if record == ("done",) or (head == "loaded" and req["do"] == "load"):
        return True
    if head == "load" and len(record) == 2 and type(record[1]) is str:
        if results.load is None:
            results.load = record[1]
        return bool(req["do"] == "load")
    if type(head) is int and len(record) == 3 and type(record[1]) is str:
        reason, value = record[1], record[2]
        if reason != "ok" and type(value) is not str:
            return _garbage(conn)
        if results.load is None:
            results.checks.setdefault(head, (reason, value))
        return False
    return _garbage(conn)


def _garbage(conn: _Conn) -> bool:
    conn.end("sent garbage")
    raise _Gone("sent garbage")


def _load_request(cfg: dict[str, Any], aliases: list[str] | None = None) -> dict[str, Any]:
    return {
        "do": "load",
        "module": cfg["module"],
        "path": cfg["path"],
        "aliases": aliases or [cfg["module"]],
    }


def _value_results(
    cfg: dict[str, Any], fork: Callable[[], _Conn], budget: _Budget, calls: list[Any]
) -> _Results:
    batch = {"do": "batch", "entry": cfg["entry"], "calls": calls}
    return _collect(fork(), budget, [_load_request(cfg), batch])


def _grade_unit(
    cfg: dict[str, Any], sealed: dict[str, Any], fork: Any, budget: _Budget, rng: Any, drawn: Any
) -> dict[str, Any]:
    tests = sealed["tests"]
    tally = _Tally(len(tests))
    results = _value_results(cfg, fork, budget, [(args, kwargs) for args, kwargs, _w in tests])
    if results.load is not None:
        return _load_error(tally, results.load)
    for i, (_args, _kwargs, want) in enumerate(tests):
        reason, got = results.get(i)
        _judge(tally, i, reason, got, want, cfg["tol"])
    return tally.verdict()


def _grade_call(
    cfg: dict[str, Any], sealed: dict[str, Any], fork: Any, budget: _Budget, rng: Any, drawn: Any
) -> dict[str, Any]:
    """Call-based tests (APPS / TACO, LiveCodeBench functional): each test
    has the arguments and the expected values it accepts (APPS wraps a
    return value in a one-element list, or not)."""
    tests = sealed["tests"]
    tally = _Tally(len(tests))
    results = _value_results(cfg, fork, budget, [(args, {}) for args, _wants in tests])
    if results.load is not None:
        return _load_error(tally, results.load)
    for i, (_args, wants) in enumerate(tests):
        reason, got = results.get(i)
        if reason == "ok" and any(same(got, want, cfg["tol"]) for want in wants[1:]):
            tally.add(i, None)
        else:
            _judge(tally, i, reason, got, wants[0], cfg["tol"])
    return tally.verdict()


def _grade_property(
    cfg: dict[str, Any], sealed: dict[str, Any], fork: Any, budget: _Budget, rng: Any, drawn: Any
) -> dict[str, Any]:
    """Inputs and the reference's outputs are made here (``drawn``: by the
    pack, once per seed); the candidate's process gets the inputs only."""
    cases = drawn if drawn is not None else _property_cases(cfg, sealed, rng)
    tally = _Tally(len(cases))
    results = _value_results(cfg, fork, budget, [([x], {}) for x, _want in cases])
    if results.load is not None:
        return _load_error(tally, results.load)
    for i, (x, want) in enumerate(cases):
        reason, got = results.get(i)
        _judge(tally, i, reason, got, want, cfg["tol"], shown=(x,))
    return tally.verdict()


class _RandomView:
    """``random`` as the generator sees it: a private Random, then the module."""

    def __init__(self, rng: Any, module: Any) -> None:
        self._rng = rng
        self._module = module

    def __getattr__(self, name: str) -> Any:
        try:
            return getattr(self._rng, name)
        except AttributeError:
            return getattr(self._module, name)


def _callable_from(
    source: str, name: str, params: str, base: dict[str, Any], prefer: tuple[str, ...]
) -> Any:
    """A full ``def`` is taken as written; a bare body (the seed's indented
    ``reference``) is wrapped as ``def name(params):``; for the generator, a
    bare expression is wrapped as ``return <expr>``."""
    namespace = dict(base)
    text = source.strip("\n")
    if text.lstrip().startswith("def "):
        before = set(namespace)
        exec(compile(text, "<" + name + ">", "exec"), namespace)
        new = [namespace[k] for k in namespace if k not in before and callable(namespace[k])]
        for wanted in prefer:
            if callable(namespace.get(wanted)):
                return namespace[wanted]
        if not new:
            raise ValueError("%s defines no function" % name)
        return new[0]
    if params == "" and "\n" not in text and not text.lstrip().startswith("return"):
        text = "    return " + text.strip()
    body = text if text[:1] in (" ", "\t") else "    " + text.replace("\n", "\n    ")
    exec(compile("def %s(%s):\n%s\n" % (name, params, body), "<" + name + ">", "exec"), namespace)
    return namespace[name]


def _property_cases(cfg: dict[str, Any], sealed: dict[str, Any], rng: Any) -> list[Any]:
    """``k`` inputs from the generator and the reference's output for each."""
    import math
    import random

    k = int(sealed["k"])
    namespace: dict[str, Any] = {"random": _RandomView(rng, random), "math": math}
    if "string" in sealed["reference"] + sealed["generator"]:  # a failed import costs ~0.3 ms
        try:
            import string

            namespace["string"] = string
        except ImportError:  # a guest that cannot import beyond its preload
            pass
    ref = _callable_from(
        sealed["reference"], "_reference", "x", namespace, (cfg["entry"], "reference", "ref")
    )
    gen = _callable_from(sealed["generator"], "_generate", "", namespace, ("generate", "generator"))
    cases = []
    for _ in range(k):  # (drawn as a plain seeded grader would: CRN hold)
        x = gen()
        cases.append((x, ref(x)))
    return cases


def _program_results(
    cfg: dict[str, Any], fork: Callable[[], _Conn], budget: _Budget, inputs: list[str]
) -> _Results:
    return _collect(fork(), budget, [{"do": "program", "path": cfg["path"], "inputs": inputs}])


def _grade_program(
    cfg: dict[str, Any], sealed: dict[str, Any], fork: Any, budget: _Budget, matches: Any
) -> dict[str, Any]:
    """The candidate as a program, fed each input on stdin; ``matches(got,
    want)`` judges its output."""
    tests = sealed["tests"]
    tally = _Tally(len(tests))
    results = _program_results(cfg, fork, budget, [given for given, _want in tests])
    if results.load is not None:
        return _load_error(tally, results.load)
    for i, (_given, want) in enumerate(tests):
        reason, got = results.get(i)
        if type(got) is not str:  # (a program's output is text: not from a worker)
            reason, got = "error", "the candidate's process sent garbage"
        if reason != "ok":
            tally.add(i, reason, got)
        elif matches(got, want):
            tally.add(i, None)
        else:
            tally.add(i, "wrong_answer", "got %.150r" % (got[:150],))
    return tally.verdict()


def _grade_stdio(
    cfg: dict[str, Any], sealed: dict[str, Any], fork: Any, budget: _Budget, rng: Any, drawn: Any
) -> dict[str, Any]:
    """Output compared token by token (floats within ``tol``)."""
    tol = cfg["tol"]
    return _grade_program(cfg, sealed, fork, budget, lambda got, want: same_tokens(got, want, tol))


def same_lines(got: str, want: str) -> bool:
    """Output and expected output as stripped lines: as many, each equal
    (the open-r1 and LiveCodeBench harnesses compare stripped lines; a
    shorter output never passes, as it would under a bare ``zip``)."""
    g = [line.strip() for line in got.strip().split("\n")]
    w = [line.strip() for line in want.strip().split("\n")]
    return g == w


def _grade_stdin_stdout(
    cfg: dict[str, Any], sealed: dict[str, Any], fork: Any, budget: _Budget, rng: Any, drawn: Any
) -> dict[str, Any]:
    return _grade_program(cfg, sealed, fork, budget, same_lines)


# ---------------------------------------------------------------------------
# Tests that are code: they run here, the candidate's calls cross
# ---------------------------------------------------------------------------


def _session(cfg: dict[str, Any], fork: Any, budget: _Budget, aliases: list[str]) -> _Session:
    return _Session(fork, budget, cfg["module"], cfg["path"], aliases)


def _test_namespace(
    session: _Session, sources: list[str] | None = None, entry: str = ""
) -> dict[str, Any]:
    """What test code sees: the names the candidate's code defines (as the
    datasets' own harnesses run tests after the solution), then its own.

    A standard library module the tests read from (``math.isclose`` in an
    MBPP assert, which relies on the solution's ``import math``) is the real
    module, whatever the candidate bound to that name: a candidate defining
    ``math`` as an object whose ``isclose`` always answers True would
    otherwise pass every such test."""
    namespace = session.visible()
    for name in _library_reads(sources or [], entry):
        value = namespace.get(name)
        if value is not None and type(value) is not type(sys):
            module = _library_module(name)
            if module is not None:
                namespace[name] = module
            else:
                del namespace[name]
    namespace["__name__"] = "__collimate_tests__"
    namespace["__builtins__"] = __builtins__
    return namespace


_READS: dict[tuple[str, ...], frozenset[str]] = {}  # a pack grades one spec many times


def _library_reads(sources: list[str], entry: str) -> set[str]:
    """The names test code reads an attribute of (``math`` in
    ``math.isclose(...)``), but the entry point. Parsed once per test
    source in this grader: every candidate of a pack shares its spec."""
    key = tuple(sources)
    if key not in _READS:
        _READS[key] = _attribute_bases(sources)
    found = set(_READS[key])
    found.discard(entry)
    return found


def _attribute_bases(sources: list[str]) -> frozenset[str]:
    import ast

    found = set()
    for source in sources:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                found.add(node.value.id)
    return frozenset(found)


def _library_module(name: str) -> Any:
    """The standard library module ``name``, imported here, or None when
    ``name`` is not one (a candidate's own class, say)."""
    names = getattr(sys, "stdlib_module_names", None)
    if names is not None and name not in names:
        return None
    import importlib

    try:
        module = importlib.import_module(name)
    except Exception:
        return None
    if names is None:  # (3.8, 3.9) the standard library lives beside os
        where = getattr(module, "__file__", None)
        home = os.path.dirname(os.__file__)
        if where is not None and not where.startswith(home + os.sep):
            return None
        if "site-packages" in (where or ""):
            return None
    return module


def _grade_assert(
    cfg: dict[str, Any], sealed: dict[str, Any], fork: Any, budget: _Budget, rng: Any, drawn: Any
) -> dict[str, Any]:
    """MBPP / AceCoder assert statements (reward: the fraction that hold),
    or a HumanEval ``check(candidate)`` (1.0 or 0.0)."""
    check = sealed.get("check")
    tests = sealed.get("tests") or []
    tally = _Tally(1 if check else len(tests))
    session = _session(cfg, fork, budget, [cfg["module"]])
    try:
        if not session.start():
            return _load_error(tally, session.load_error or "the candidate did not load")
        namespace = _test_namespace(session, [check] if check else list(tests), cfg["entry"])
        prompt = sealed.get("prompt")
        if prompt:
            failed = _run_prompt(cfg, prompt, namespace, budget, session, tally)
            if failed is not None:
                return failed
        setup = sealed.get("setup")
        if setup:
            before = session.calls
            failure = _attempt(budget, exec, compile(setup, "<setup>", "exec"), namespace)
            if failure[0] is not None:
                return _test_code_failed(session, before, "the setup code", failure, tally, setup)
        if check:
            return _run_check(cfg, check, namespace, tally, budget, session)
        for i, statement in enumerate(tests):
            try:
                code = compile(statement, "<test %d>" % i, "exec")
            except SyntaxError as exc:
                return {"reward": 0.0, "grader_error": "test %d does not compile: %s" % (i, exc)}
            reason, message = _run_test(budget, exec, code, namespace)
            tally.add(i, reason, message)
            if reason == "wrong_answer" and message.rstrip(": ") == "AssertionError":
                # a bare assert says nothing: the trainer's log gets the
                # statement, apart from the message (which feedback to a
                # policy may show: the tests stay out of it)
                tally.note_statement(i, statement.strip())
        return tally.verdict()
    finally:
        session.close()


def _run_prompt(
    cfg: dict[str, Any],
    prompt: str,
    namespace: dict[str, Any],
    budget: _Budget,
    session: _Session,
    tally: _Tally,
) -> dict[str, Any] | None:
    """Run the dataset's prompt code over the candidate's names: its helper
    functions and imports replace any the candidate redefined, so the tests
    compute with the dataset's; only the entry point stays the candidate's
    (the prompt's is a stub). None when it ran, else the verdict."""
    entry = cfg["entry"]
    candidate = namespace.get(entry)
    before = session.calls
    failure = _attempt(budget, exec, compile(prompt, "<prompt>", "exec"), namespace)
    if failure[0] is not None:
        return _test_code_failed(session, before, "the prompt code", failure, tally, prompt)
    if candidate is None:
        namespace.pop(entry, None)
    else:
        namespace[entry] = candidate
    return None


def _run_check(
    cfg: dict[str, Any],
    check: str,
    namespace: dict[str, Any],
    tally: _Tally,
    budget: _Budget,
    session: _Session,
) -> dict[str, Any]:
    before = session.calls
    # (whatever ``check`` is after this is the check code's, never the
    # candidate's: a candidate's ``check = 0`` must not make it a dataset fault)
    namespace.pop("check", None)
    failure = _attempt(budget, exec, compile(check, "<check>", "exec"), namespace)
    if failure[0] is not None:
        return _test_code_failed(session, before, "the check code", failure, tally, check)
    checker = namespace.get("check")
    candidate = namespace.get(cfg["entry"])
    if not callable(checker):
        return {"reward": 0.0, "grader_error": "the check code defines no check()"}
    if candidate is None:
        return _load_error(tally, "error: the candidate defines no function %r" % cfg["entry"])
    reason, message = _run_test(budget, checker, candidate)
    tally.add(0, reason, message)
    return tally.verdict()


def _grade_pytest(
    cfg: dict[str, Any], sealed: dict[str, Any], fork: Any, budget: _Budget, rng: Any, drawn: Any
) -> dict[str, Any]:
    """A KodCode-style test module importing from ``solution``: every
    ``test_*`` function and ``Test*`` class method runs here (with this
    runtime's ``pytest`` stand-in), against the candidate as ``solution``."""
    session = _session(cfg, fork, budget, ["solution", cfg["module"]])
    try:
        if not session.start():
            return _load_error(_Tally(0), session.load_error or "the candidate did not load")
        module: Any = type(sys)("solution")
        for name, value in session.exports.items():
            if value is not None:  # (``from solution import sum`` finds it)
                setattr(module, name, value)
        # ``import *`` brings no name that shadows a builtin or pytest, and
        # the library modules the tests read are the real ones
        visible = _test_namespace(session, [sealed["test"]], cfg["entry"])
        for name, value in visible.items():
            if type(value) is type(sys) and not name.startswith("__"):
                setattr(module, name, value)
        module.__all__ = sorted(n for n in session.visible() if not n.startswith("_"))
        runner: Any = globals().get("_run_pytest_module")
        if runner is None:  # imported as a package (tests), not joined into one program
            from .pytest_shim import _run_pytest_module as runner
        return runner(sealed["test"], module, session, budget)  # type: ignore[no-any-return]
    finally:
        session.close()
