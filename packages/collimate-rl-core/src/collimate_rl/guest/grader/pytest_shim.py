"""Running a pytest-style test module in the grader, without pytest.

KodCode-style rows ship a test module (``from solution import f``, ``test_*``
functions, ``Test*`` classes, ``pytest.raises`` / ``pytest.approx`` /
``pytest.mark.parametrize`` / simple fixtures). Guests rarely have pytest,
and importing it would cost a grade more than the grade itself, so the
module runs against this stand-in: the parts of pytest such tests use, with
pytest's meaning. Each collected test (each parametrized case) counts once.
"""

# The guest may run Python 3.8 with nothing imported beyond its preload:
# no zip(strict=), no contextlib, and %-formatting is as good as any.
# ruff: noqa: UP031, SIM105, SIM102, B905
from __future__ import annotations

import sys

from .budget import _Budget, _Tally
from .code_tests import _attempt, _run_test, _test_code_failed

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - typing only, never imported in the guest
    from typing import Any


class _Skipped(Exception):
    """``pytest.skip()``: the test does not count."""


class _Failed(AssertionError):
    """``pytest.fail()``."""


class _Raises:
    """``pytest.raises(E, match=...)`` as a context manager (or called)."""

    def __init__(self, expected: Any, match: Any = None) -> None:
        self.expected = expected
        self.match = match
        self.value: Any = None
        self.type: Any = None

    def __enter__(self) -> _Raises:
        return self

    def __exit__(self, kind: Any, value: Any, tb: Any) -> bool:
        if kind is None:
            raise _Failed("DID NOT RAISE %r" % (self.expected,))
        if not issubclass(kind, self.expected):
            return False
        if self.match is not None:
            import re

            if not re.search(self.match, str(value)):
                raise _Failed("%r does not match %r" % (str(value), self.match))
        self.value = value
        self.type = kind
        return True


def _raises(expected: Any, *args: Any, match: Any = None, **kwargs: Any) -> Any:
    if args:
        with _Raises(expected, match) as info:
            args[0](*args[1:], **kwargs)
        return info
    return _Raises(expected, match)


class _Approx:
    """``pytest.approx``: numbers (and lists, tuples, dicts of them) equal
    within a relative 1e-6 or an absolute 1e-12, as pytest's defaults."""

    def __init__(self, expected: Any, rel: Any = None, abs: Any = None) -> None:
        self.expected = expected
        self.rel = 1e-6 if rel is None else rel
        self.abs = 1e-12 if abs is None else abs

    def _close(self, got: Any, want: Any) -> bool:
        if isinstance(want, (list, tuple)):
            return (
                isinstance(got, (list, tuple))
                and len(got) == len(want)
                and all(self._close(g, w) for g, w in zip(got, want))
            )
        if isinstance(want, dict):
            return (
                isinstance(got, dict)
                and set(got) == set(want)
                and all(self._close(got[k], want[k]) for k in want)
            )
        if type(got) not in (int, float, complex) or type(want) not in (int, float, complex):
            return bool(type(got) is type(want) and got == want)
        if got == want:
            return True
        return bool(abs(got - want) <= max(self.rel * abs(want), self.abs))

    def __eq__(self, other: object) -> bool:
        return self._close(other, self.expected)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return "approx(%r)" % (self.expected,)


class _Mark:
    """``pytest.mark.<name>(...)``: parametrize is honoured, skip / skipif
    / xfail are noted, anything else is a no-op decorator."""

    def __init__(self, name: str, args: Any = (), kwargs: Any = None) -> None:
        self.name = name
        self.args = args
        self.kwargs = kwargs or {}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        applied = bool(self.args or self.kwargs)  # @mark.parametrize(...) then the function
        if (
            len(args) == 1
            and not kwargs
            and callable(args[0])
            and (applied or self.name != "skipif")
        ):
            if applied or not isinstance(args[0], str):
                return _with_mark(args[0], self)
        return _Mark(self.name, args, kwargs)

    def __getattr__(self, name: str) -> _Mark:
        return _Mark(name)


def _with_mark(fn: Any, mark: _Mark) -> Any:
    marks = list(getattr(fn, "_collimate_marks", ()))
    marks.append(mark)
    try:
        fn._collimate_marks = marks
    except Exception:
        pass
    return fn


class _MarkFactory:
    def __getattr__(self, name: str) -> _Mark:
        return _Mark(name)


class _Param:
    def __init__(self, values: Any, marks: Any = (), id: Any = None) -> None:
        self.values = values
        self.marks = marks


def _fixture(*args: Any, **kwargs: Any) -> Any:
    def mark(fn: Any) -> Any:
        fn._collimate_fixture = True
        return fn

    if len(args) == 1 and callable(args[0]) and not kwargs:
        return mark(args[0])
    return mark


def _skip(reason: str = "", **kwargs: Any) -> Any:
    raise _Skipped(reason)


def _fail(reason: str = "", **kwargs: Any) -> Any:
    raise _Failed(reason)


def _pytest_module() -> Any:
    module: Any = type(sys)("pytest")
    module.raises = _raises
    module.approx = _Approx
    module.mark = _MarkFactory()
    module.param = lambda *values, **kw: _Param(values, **kw)
    module.fixture = _fixture
    module.skip = _skip
    module.fail = _fail
    module.importorskip = lambda name, *a, **k: __import__(name)
    return module


def _cases(fn: Any) -> list[dict[str, Any]] | None:
    """The parametrized argument sets of ``fn`` (one empty set when none),
    or None when it is marked skip."""
    cases: list[dict[str, Any]] = [{}]
    for mark in reversed(getattr(fn, "_collimate_marks", ())):
        if mark.name == "skip" or (mark.name == "skipif" and mark.args and mark.args[0]):
            return None
        if mark.name != "parametrize" or len(mark.args) < 2:
            continue
        names = mark.args[0]
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",") if n.strip()]
        rows = []
        for row in mark.args[1]:
            if isinstance(row, _Param):
                row = row.values
            if len(names) == 1:
                row = (row,)
            rows.append(dict(zip(names, row)))
        cases = [dict(case, **row) for case in cases for row in rows]
    return cases


def _tests_of(namespace: dict[str, Any]) -> list[tuple[str, Any]]:
    tests = []
    for name, value in list(namespace.items()):
        if name.startswith("test") and callable(value) and not isinstance(value, type):
            if not getattr(value, "_collimate_fixture", False):
                tests.append((name, value))
        elif name.startswith("Test") and isinstance(value, type):
            for attr in list(vars(value)):
                if attr.startswith("test") and callable(getattr(value, attr, None)):
                    tests.append((name + "." + attr, (value, attr)))
    return tests


def _call_with_fixtures(
    fn: Any, given: dict[str, Any], namespace: dict[str, Any], finalizers: list[Any]
) -> Any:
    """Call ``fn`` with its parameters from ``given`` (parametrize) or from
    the module's fixtures (a generator fixture is finished afterwards)."""
    code = getattr(fn, "__code__", None)
    params = list(code.co_varnames[: code.co_argcount]) if code is not None else []
    if params and params[0] == "self":
        params = params[1:]
    kwargs = {}
    for name in params:
        if name in given:
            kwargs[name] = given[name]
            continue
        fixture = namespace.get(name)
        if not callable(fixture) or not getattr(fixture, "_collimate_fixture", False):
            raise TypeError("test needs the fixture %r, which this runner does not provide" % name)
        value = _call_with_fixtures(fixture, {}, namespace, finalizers)
        if hasattr(value, "__next__") and hasattr(value, "send"):
            generator = value
            value = next(generator)
            finalizers.append(generator)
        kwargs[name] = value
    return fn(**kwargs)


def _run_pytest_module(source: str, solution: Any, session: Any, budget: _Budget) -> dict[str, Any]:
    saved = {name: sys.modules.get(name) for name in ("solution", "pytest")}
    sys.modules["solution"] = solution
    sys.modules["pytest"] = _pytest_module()
    try:
        namespace: dict[str, Any] = {"__name__": "test_solution", "__builtins__": __builtins__}
        try:
            code = compile(source, "<test module>", "exec")
        except SyntaxError as exc:
            return {"reward": 0.0, "grader_error": "the test module does not compile: %s" % exc}
        before = session.calls
        failure = _attempt(budget, exec, code, namespace)
        reason, message = failure[0], failure[1]
        if reason is not None:
            tally = _Tally(max(1, len(_tests_of(namespace))))
            # importing a name the candidate does not define is the candidate's failure
            if "ImportError" in message or "cannot import" in message:
                verdict = tally.verdict()
                verdict["load_error"] = message
                return verdict
            return _test_code_failed(session, before, "the test module", failure, tally, source)
        planned = []
        for name, test in _tests_of(namespace):
            fn = getattr(test[0], test[1]) if isinstance(test, tuple) else test
            cases = _cases(fn)
            if cases is None:
                continue
            for i, case in enumerate(cases):
                planned.append((name if len(cases) == 1 else "%s[%d]" % (name, i), test, case))
        tally = _Tally(len(planned))
        names = []
        for index, (name, test, case) in enumerate(planned):
            finalizers: list[Any] = []

            def run(test: Any = test, case: Any = case, finalizers: Any = finalizers) -> None:
                if isinstance(test, tuple):
                    owner = test[0]()
                    fn = getattr(owner, test[1])
                    setup = getattr(owner, "setup_method", None)
                    if callable(setup):
                        setup(fn)
                else:
                    fn = test
                _call_with_fixtures(fn, case, namespace, finalizers)
                for generator in finalizers:
                    try:
                        next(generator)
                    except StopIteration:
                        pass

            reason, message = _run_test(budget, run)
            if reason == "error" and message.startswith("_Skipped"):
                tally.total -= 1
                continue
            tally.add(index, reason, message)
            names.append(name)
        verdict = tally.verdict()
        verdict["tests"] = len(names)
        return verdict
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
