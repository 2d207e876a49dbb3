"""Reward kinds for the test formats of real code datasets.

Each class validates its data in the SDK (a malformed row fails when the
spec is built, naming what is wrong, not as zeros in the guest) and hands
the guest plain data. What decides the reward is sealed (see
:meth:`~.spec.GuestReward.program_files`): the candidate's process never
holds it.

============  ===========================================  =========================
kind          datasets                                      reward
============  ===========================================  =========================
``assert``    MBPP, AceCoder (assert statements);           fraction of statements
              HumanEval (``check(candidate)``)              1.0 or 0.0
``pytest``    KodCode (a test module importing              fraction of tests passed
              ``solution``)
``call``      APPS / TACO call-based, LiveCodeBench /       fraction of calls right
              DeepCoder functional (``Solution`` too)
``stdin_stdout``  open-r1 ``verification_info``,            fraction of runs right
              LiveCodeBench ``testtype: "stdin"``
============  ===========================================  =========================

Every kind takes ``scoring="all"`` (1.0 only when every test passes, as
DeepCoder scores) besides the default ``"fraction"``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .kinds import (
    _check_json_like,
    _io_pairs,
    _positive_or_none,
    _scoring,
    _TestsReward,
    _tolerance,
)
from .spec import GuestReward

__all__ = [
    "AssertReward",
    "CallReward",
    "PytestReward",
    "StdinStdoutReward",
    "check_scoring",
    "lcb_args",
]


def check_scoring(scoring: Any) -> str:
    """``scoring`` when it is one of :data:`~.spec.SCORINGS`, else a ValueError."""
    return _scoring(scoring)


def _compiles(source: str, what: str, mode: str = "exec") -> None:
    try:
        compile(source, f"<{what}>", mode)
    except SyntaxError as exc:
        raise ValueError(f"{what} does not compile: {exc}") from exc


def _source(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{what} must be non-empty Python source, got {value!r:.80}")
    return value


class AssertReward(GuestReward):
    """Assert statements (MBPP ``test_list``, AceCoder ``test_cases``):
    reward = the fraction that hold. Or a HumanEval ``check`` source
    defining ``check(candidate)``, called on the ``entry`` function:
    1.0 or 0.0. The statements run in the grader, and see every name the
    candidate's code defines (as the datasets' harnesses run them after the
    solution); each call of the candidate's code runs in its process.
    ``setup`` (MBPP's ``test_setup_code``) runs first, in the grader.

    ``prompt`` is the prompt's code when the candidate continues it
    (HumanEval's signature, docstring and helper functions): the grader
    runs it after taking the candidate's names and before the setup and the
    tests, so every name the prompt defines, but the entry point, is the
    dataset's. A candidate that redefines a helper the check relies on
    (``encode_cyclic`` under ``decode_cyclic``'s check) changes only its own
    code, not what the check computes."""

    kind = "assert"

    def __init__(
        self,
        tests: Sequence[str] | None = None,
        *,
        check: str | None = None,
        setup: str | None = None,
        entry: str = "solve",
        scoring: str = "fraction",
        test_timeout: float | None = None,
        prompt: str | None = None,
    ) -> None:
        if (tests is None) == (check is None):
            raise ValueError("an assert reward needs either 'tests' (statements) or 'check'")
        statements: list[str] = []
        if tests is not None:
            if isinstance(tests, (str, bytes)) or not isinstance(tests, Sequence) or not tests:
                raise ValueError("tests must be a non-empty list of assert statements")
            for i, statement in enumerate(tests):
                _compiles(_source(statement, f"test #{i}"), f"test #{i}")
                statements.append(statement)
        if check is not None:
            _compiles(_source(check, "check"), "check")
            if "def check" not in check:
                raise ValueError("check must define check(candidate)")
        if setup is not None and setup.strip():
            _compiles(setup, "setup")
        if prompt is not None and prompt.strip():
            _compiles(prompt, "prompt")
        self.prompt = prompt if prompt and prompt.strip() else None
        self.tests = statements
        self.check = check
        self.setup = setup if setup and setup.strip() else None
        self.entry = entry
        self.scoring = check_scoring(scoring)
        self.test_timeout = _positive_or_none(test_timeout, "test_timeout")

    def guest_config(self) -> Mapping[str, Any]:
        config: dict[str, Any] = {"tests": self.tests, "check": self.check, "setup": self.setup}
        if self.prompt is not None:  # (absent otherwise: the sealed text of older specs is kept)
            config["prompt"] = self.prompt
        return config

    def __repr__(self) -> str:
        what = "check" if self.check else f"{len(self.tests)} asserts"
        return f"AssertReward({what}, entry={self.entry!r})"


class PytestReward(GuestReward):
    """A pytest-style test module (KodCode's ``test``) that imports the
    candidate as ``solution``: every ``test_*`` function and ``Test*``
    class method runs in the grader (``pytest.raises``, ``approx``,
    ``mark.parametrize`` and module fixtures work without pytest in the
    guest); reward = the fraction that pass."""

    kind = "pytest"

    def __init__(
        self,
        test: str,
        *,
        scoring: str = "fraction",
        test_timeout: float | None = None,
        entry: str = "solve",
    ) -> None:
        _compiles(_source(test, "test"), "test")
        if "def test" not in test:
            raise ValueError("the test module defines no test_* function")
        self.test = test
        self.entry = entry
        self.scoring = check_scoring(scoring)
        self.test_timeout = _positive_or_none(test_timeout, "test_timeout")

    def guest_config(self) -> Mapping[str, Any]:
        return {"test": self.test}

    def __repr__(self) -> str:
        return "PytestReward()"


class CallReward(_TestsReward):
    """Call-based tests: ``fn_name(*args)`` against the expected value, for
    a module-level function or a LeetCode-style ``Solution`` method (a fresh
    instance per call). ``tests`` is a list of ``(args, expected)``; an
    expected value may list alternatives (``accept``): APPS stores a return
    value wrapped in a one-element list, or not. Tuples equal lists; floats
    within ``tol``."""

    kind = "call"

    def __init__(
        self,
        tests: Sequence[tuple[Sequence[Any], Any]],
        fn_name: str,
        *,
        accept: Sequence[Sequence[Any]] | None = None,
        scoring: str = "fraction",
        tol: float | None = 1e-9,
        test_timeout: float | None = None,
    ) -> None:
        if not isinstance(fn_name, str) or not fn_name.isidentifier():
            raise ValueError(f"fn_name must be a function name, got {fn_name!r:.80}")
        raw: object = tests
        if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence):
            raise ValueError("tests must be a list of (args, expected) pairs")
        sealed = []
        for i, pair in enumerate(tests):
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise ValueError(f"call test #{i} must be an (args, expected) pair")
            args, expected = pair
            if not isinstance(args, (list, tuple)):
                raise ValueError(f"call test #{i}: args must be a list")
            wants = [expected, *(accept[i] if accept is not None else ())]
            _check_json_like(list(args), f"call test #{i}")
            _check_json_like(wants, f"call test #{i}")
            sealed.append((list(args), wants))
        self.scoring = check_scoring(scoring)
        self.tol = _tolerance(tol, "tol")
        self._keep_tests(tests, sealed, fn_name, test_timeout)

    def __repr__(self) -> str:
        return f"CallReward({len(self.tests)} tests, fn_name={self.entry!r})"


class StdinStdoutReward(_TestsReward):
    """The candidate as a program: fed each ``input`` on stdin, its output
    must equal ``output`` line by line, each line stripped, as many lines
    (open-r1's and LiveCodeBench's comparison, without letting a shorter
    output pass)."""

    kind = "stdin_stdout"

    def __init__(
        self,
        tests: Sequence[Mapping[str, Any]],
        *,
        scoring: str = "fraction",
        test_timeout: float | None = None,
        entry: str = "solve",
    ) -> None:
        pairs = _io_pairs(tests, "stdin/stdout", ("output",), empty_ok=False)
        self.scoring = check_scoring(scoring)
        self._keep_tests(tests, pairs, entry, test_timeout)

    def __repr__(self) -> str:
        return f"StdinStdoutReward({len(self.tests)} tests)"


def lcb_args(text: Any, index: int) -> list[Any]:
    """A LiveCodeBench functional input: one JSON value per line."""
    if not isinstance(text, str):
        raise ValueError(f"functional test #{index}: input must be a string of JSON lines")
    args = []
    for n, line in enumerate(text.split("\n")):
        if not line.strip():
            continue
        try:
            args.append(json.loads(line))
        except ValueError as exc:
            raise ValueError(
                f"functional test #{index}: input line {n + 1} is not JSON ({exc}): {line!r:.60}"
            ) from exc
    return args
