"""The built-in reward kinds: unit tests, properties, stdin/stdout tests.

Each is a :class:`~.spec.GuestReward`: it validates and normalises its data
in the SDK (so a malformed spec fails at construction, not as 256 zeros in
the guest) and hands plain data to the guest runtime.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from .spec import SCORINGS, GuestReward

__all__ = ["ARG_KEYS", "EXPECTED_KEYS", "PropertyReward", "StdioReward", "UnitTestReward"]

#: Keys read, in order, for a unit test's arguments and expected value.
ARG_KEYS: Final = ("input", "args", "inputs")
EXPECTED_KEYS: Final = ("output", "expected", "expected_output", "outputs")


def _check_json_like(value: Any, where: str) -> None:
    if value is None or isinstance(value, (bool, int, str)):
        return
    if isinstance(value, float):
        return
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValueError(f"{where}: dict keys must be str, got {k!r}")
            _check_json_like(v, where)
        return
    if isinstance(value, (list, tuple)):
        for v in value:
            _check_json_like(v, where)
        return
    raise ValueError(f"{where}: {type(value).__name__} is not JSON-like data")


def _scoring(scoring: Any) -> str:
    if scoring not in SCORINGS:
        raise ValueError(f"scoring must be one of {SCORINGS}, got {scoring!r}")
    return str(scoring)


def _io_pairs(
    tests: Sequence[Mapping[str, Any]], what: str, expected_keys: Sequence[str], *, empty_ok: bool
) -> list[tuple[str, str]]:
    """``tests`` of ``{input, output}`` (the output under the first of
    ``expected_keys`` it has) as ``(input, output)`` string pairs, or a
    ValueError naming the ``what`` test at fault."""
    raw: object = tests
    if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence) or not (raw or empty_ok):
        some = "a list" if empty_ok else "a non-empty list"
        raise ValueError(f"tests must be {some} of {{'input': str, 'output': str}} objects")
    pairs: list[tuple[str, str]] = []
    for i, test in enumerate(tests):
        if not isinstance(test, Mapping):
            raise ValueError(f"{what} test #{i} must be an object {{'input', 'output'}}")
        given = test.get("input", "")
        want = next((test[k] for k in expected_keys if k in test), None)
        if not isinstance(given, str) or not isinstance(want, str):
            raise ValueError(f"{what} test #{i}: input and output must be strings")
        pairs.append((given, want))
    return pairs


def _positive_or_none(value: float | None, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{name} must be a positive number of seconds or None, got {value!r}")
    return float(value)


def _tolerance(value: float | None, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(f"{name} must be a number >= 0 or None, got {value!r}")
    return float(value)


def normalise_unit_test(test: Any, index: int) -> tuple[list[Any], dict[str, Any], Any]:
    """``(args, kwargs, expected)`` of one test.

    Arguments come from ``input`` (or ``args`` / ``inputs``): a list is
    spread as positional arguments, anything else is the single argument (so
    a function of one list argument is tested as ``{"input": [[1, 2]]}``);
    ``kwargs`` adds keyword arguments. The expected value comes from
    ``output`` (or ``expected`` / ``expected_output`` / ``outputs``).
    """
    where = f"unit test #{index}"
    if not isinstance(test, Mapping):
        raise ValueError(f"{where} must be an object like {{'input': args, 'output': expected}}")
    args_key = next((k for k in ARG_KEYS if k in test), None)
    raw_args = test[args_key] if args_key is not None else []
    args = list(raw_args) if isinstance(raw_args, (list, tuple)) else [raw_args]
    kwargs = test.get("kwargs") or {}
    if not isinstance(kwargs, Mapping):
        raise ValueError(f"{where}: kwargs must be an object")
    expected_key = next((k for k in EXPECTED_KEYS if k in test), None)
    if expected_key is None:
        raise ValueError(f"{where} has no expected value (one of {', '.join(EXPECTED_KEYS)})")
    expected = test[expected_key]
    _check_json_like(args, where)
    _check_json_like(dict(kwargs), where)
    _check_json_like(expected, where)
    return args, dict(kwargs), expected


class _TestsReward(GuestReward):
    """A grader whose guest config is its ``tests``: checked and prepared for
    the grader by the subclass's ``__init__``, then kept by :meth:`_keep_tests`."""

    tests: list[Any]

    def _keep_tests(
        self, tests: Sequence[Any], prepared: list[Any], entry: str, test_timeout: float | None
    ) -> None:
        """Keep ``tests`` as given, and ``prepared``: what the grader is sent."""
        self.tests = list(tests)
        self.entry = entry
        self.test_timeout = _positive_or_none(test_timeout, "test_timeout")
        self._prepared_tests = prepared

    def guest_config(self) -> Mapping[str, Any]:
        return {"tests": self._prepared_tests}


class UnitTestReward(_TestsReward):
    """Reward = fraction of ``tests`` where ``entry(*input) == output``.

    Floats compare within ``tol`` (absolute or relative); lists and tuples
    are interchangeable; a result must be a plain builtin value when the
    expected one is (an object whose ``__eq__`` always says yes scores 0).
    ``test_timeout`` bounds each test (default: only the exec's budget).
    """

    kind = "unit"

    def __init__(
        self,
        tests: Sequence[Mapping[str, Any]],
        entry: str = "solve",
        *,
        tol: float | None = 1e-9,
        test_timeout: float | None = None,
        scoring: str = "fraction",
    ) -> None:
        raw: object = tests
        if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence):
            raise ValueError("tests must be a list of {'input': ..., 'output': ...} objects")
        self.scoring = _scoring(scoring)
        self.tol = _tolerance(tol, "tol")
        normalised = [normalise_unit_test(t, i) for i, t in enumerate(tests)]
        self._keep_tests(tests, normalised, entry, test_timeout)

    def __repr__(self) -> str:
        return f"UnitTestReward({len(self.tests)} tests, entry={self.entry!r})"


class PropertyReward(GuestReward):
    """Reward = fraction of ``k`` generated inputs where ``entry(x) == reference(x)``.

    ``reference`` is the indented body of ``def reference(x):`` (the seed's
    form) or a full ``def``; ``generator`` is an expression (or a full
    ``def``) drawing one input with ``random`` (also ``math``, ``string``).
    Inputs come from the exec's seed, so a pinned seed gives the same ``k``
    inputs on every backend, and a candidate using ``random`` cannot shift
    them.
    """

    kind = "property"

    def __init__(
        self,
        reference: str,
        generator: str,
        k: int = 16,
        entry: str = "solve",
        *,
        tol: float | None = 1e-9,
        test_timeout: float | None = None,
        scoring: str = "fraction",
    ) -> None:
        self.scoring = _scoring(scoring)
        if not isinstance(reference, str) or not reference.strip():
            raise ValueError("reference must be Python source (a function body or a def)")
        if not isinstance(generator, str) or not generator.strip():
            raise ValueError("generator must be a Python expression (or a def)")
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValueError(f"k must be an int >= 0, got {k!r}")
        for name, src in (("reference", reference), ("generator", generator)):
            _check_compiles(name, src)
        self.reference = reference
        self.generator = generator
        self.k = k
        self.entry = entry
        self.tol = _tolerance(tol, "tol")
        self.test_timeout = _positive_or_none(test_timeout, "test_timeout")

    def guest_config(self) -> Mapping[str, Any]:
        return {"reference": self.reference, "generator": self.generator, "k": self.k}

    def __repr__(self) -> str:
        return f"PropertyReward(k={self.k}, entry={self.entry!r})"


def _check_compiles(name: str, source: str) -> None:
    """Reject a reference/generator that cannot compile in any of the forms
    the guest accepts (a syntax error would otherwise zero a whole batch)."""
    text = source.strip("\n")
    attempts = [text] if text.lstrip().startswith("def ") else []
    body = text if text[:1] in (" ", "\t") else "    " + text.replace("\n", "\n    ")
    attempts.append(f"def _f(x):\n{body}\n")
    if "\n" not in text.strip():
        attempts.append(f"def _f():\n    return {text.strip()}\n")
    errors = []
    for attempt in attempts:
        try:
            compile(attempt, f"<{name}>", "exec")
            return
        except SyntaxError as exc:
            errors.append(exc)
    raise ValueError(f"{name} does not compile: {errors[-1]}")


class StdioReward(_TestsReward):
    """Reward = fraction of ``tests`` where the candidate PROGRAM, fed
    ``input`` on stdin, prints ``output`` (competitive-programming style).

    Output is compared token by token (any whitespace, trailing newlines
    ignored); an expected token written as a float accepts an absolute or
    relative error up to ``float_tol`` (``None``: exact tokens). The program
    runs as ``__main__`` with real fds 0/1, so ``input()``, ``sys.stdin``,
    ``open(0)`` and ``sys.exit(0)`` work as under a judge.
    """

    kind = "stdio"

    def __init__(
        self,
        tests: Sequence[Mapping[str, Any]],
        *,
        float_tol: float | None = 1e-6,
        test_timeout: float | None = None,
        entry: str = "solve",
        scoring: str = "fraction",
    ) -> None:
        self.scoring = _scoring(scoring)
        pairs = _io_pairs(tests, "stdio", EXPECTED_KEYS, empty_ok=True)
        self.tol = _tolerance(float_tol, "float_tol")
        self.float_tol = self.tol
        self._keep_tests(tests, pairs, entry, test_timeout)

    def __repr__(self) -> str:
        return f"StdioReward({len(self.tests)} tests)"
