"""Core's reward kinds, registered through the ``collimate_rl_reward_kinds``
hook like any third-party kind (listed in the built-in plugin modules).

Each factory takes ``(ground_truth, entry)``; ``ground_truth`` is already
decoded (see :mod:`.registry` for the accepted shapes).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..plugins.events import RewardFactory
from ..plugins.markers import hookimpl
from .appended_tests import ProgramReward
from .contest import ContestReward
from .dataset_kinds import AssertReward, CallReward, PytestReward, StdinStdoutReward, lcb_args
from .extract import prompt_code
from .kinds import PropertyReward, StdioReward, UnitTestReward
from .spec import RewardSpec


def _opt(gt: Mapping[str, Any], *names: str) -> dict[str, Any]:
    return {n: gt[n] for n in names if gt.get(n) is not None}


def _json(value: Any, what: str) -> Any:
    """A field some datasets store as a JSON string (LiveCodeBench's test
    lists and metadata)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError as exc:
            raise ValueError(f"{what} is a string but not JSON ({exc})") from exc
    return value


def _first(gt: Mapping[str, Any], *names: str) -> Any:
    return next((gt[n] for n in names if gt.get(n) is not None), None)


def _setup(gt: Mapping[str, Any]) -> str | None:
    """The code run before assert tests: sanitized MBPP's ``test_imports``
    (a list of import lines), then ``setup`` / MBPP's ``test_setup_code``."""
    parts: list[str] = []
    imports = gt.get("test_imports")
    if isinstance(imports, str):
        parts.append(imports)
    elif isinstance(imports, (list, tuple)):
        parts.extend(line for line in imports if isinstance(line, str))
    code = _first(gt, "setup", "test_setup_code")
    if isinstance(code, str):
        parts.append(code)
    joined = "\n".join(p for p in parts if p.strip())
    return joined or None


def assert_kind(gt: Any, entry: str) -> RewardSpec:
    """A list of assert statements; MBPP ``{"test_list", "test_setup_code"?}``
    (sanitized MBPP's ``test_imports`` too);
    AceCoder ``{"test_cases": [...]}``; ``{"tests", "setup"?}``; HumanEval
    ``{"test": "def check(candidate): ...", "entry_point"}`` or ``{"check"}``;
    a ``prompt`` whose code defines the entry point is the dataset's (see
    :class:`.AssertReward`)."""
    if isinstance(gt, (list, tuple)):
        return AssertReward(list(gt), entry=entry)
    if not isinstance(gt, Mapping):
        raise ValueError(f"assert ground truth must be a list or an object, got {gt!r:.80}")
    name = str(_first(gt, "entry", "entry_point", "fn_name") or entry)
    # a whole HumanEval row as the ground truth brings its prompt; prose is not code
    prompt = prompt_code(gt.get("prompt"), name)
    check = gt.get("check")
    if check is None and isinstance(gt.get("test"), str) and "def check" in gt["test"]:
        check = gt["test"]
    tests = _first(gt, "tests", "test_list", "test_cases")
    if check is None and tests is None:
        raise ValueError(
            "assert ground truth needs assert statements ('tests', MBPP's 'test_list', "
            "AceCoder's 'test_cases') or a HumanEval check ('test' or 'check')"
        )
    return AssertReward(
        None if check is not None else tests,
        check=check,
        setup=_setup(gt),
        entry=name,
        prompt=prompt,
        **_opt(gt, "scoring", "test_timeout"),
    )


def pytest_kind(gt: Any, entry: str) -> RewardSpec:
    """KodCode ``{"test": "<module importing from solution>"}`` (or the source itself)."""
    if isinstance(gt, str):
        return PytestReward(gt)
    if not isinstance(gt, Mapping) or not isinstance(gt.get("test"), str):
        raise ValueError("pytest ground truth needs 'test': the source of a test module")
    return PytestReward(gt["test"], **_opt(gt, "scoring", "test_timeout"))


def _lcb_tests(gt: Any) -> list[Any]:
    """LiveCodeBench / DeepCoder tests: a list, ``tests``, or the public and
    private lists (each possibly a JSON string)."""
    if isinstance(gt, (list, tuple)):
        return list(gt)
    tests: list[Any] = []
    if gt.get("tests") is not None:
        tests.extend(_json(gt["tests"], "tests"))
    for key in ("public_test_cases", "private_test_cases"):
        if gt.get(key) is not None:
            tests.extend(_json(gt[key], key))
    return tests


def _func_name(gt: Any, entry: str) -> str:
    if isinstance(gt, Mapping):
        meta = _json(gt.get("metadata"), "metadata") or {}
        if not isinstance(meta, Mapping):
            raise ValueError("metadata must be an object")
        found = _first(gt, "fn_name", "func_name", "entry") or meta.get("func_name")
        if found:
            return str(found)
    return entry


def call_kind(gt: Any, entry: str) -> RewardSpec:
    """APPS / TACO ``{"fn_name", "inputs": [[args]], "outputs": [...]}``, or
    LiveCodeBench / DeepCoder functional tests
    ``[{"input": "<json per line>", "output": "<json>", "testtype": "functional"}]``
    (``func_name`` in ``metadata``)."""
    if isinstance(gt, Mapping) and "inputs" in gt and "outputs" in gt:
        inputs, outputs = gt["inputs"], gt["outputs"]
        if not isinstance(inputs, list) or not isinstance(outputs, list):
            raise ValueError("call ground truth: 'inputs' and 'outputs' must be lists")
        if len(inputs) != len(outputs):
            raise ValueError(f"{len(inputs)} inputs but {len(outputs)} outputs")
        tests, accept = [], []
        for i, (args, out) in enumerate(zip(inputs, outputs, strict=True)):
            if not isinstance(args, list):
                raise ValueError(f"call test #{i}: an APPS input is the list of arguments")
            tests.append((args, out))
            # APPS: a return value is stored wrapped in a one-element list, or not
            accept.append([out[0]] if isinstance(out, list) and len(out) == 1 else [])
        fn = _func_name(gt, "")
        if not fn:
            raise ValueError("call ground truth needs 'fn_name' (the function to call)")
        return CallReward(tests, fn, accept=accept, **_opt(gt, "scoring", "tol", "test_timeout"))
    if not isinstance(gt, (Mapping, list, tuple)):
        raise ValueError(f"call ground truth must be an object or a list, got {gt!r:.80}")
    pairs = []
    for i, test in enumerate(_lcb_tests(gt)):
        if not isinstance(test, Mapping) or "input" not in test or "output" not in test:
            raise ValueError(f"functional test #{i} must be an object with 'input' and 'output'")
        try:
            expected = (
                json.loads(test["output"]) if isinstance(test["output"], str) else test["output"]
            )
        except ValueError as exc:
            raise ValueError(f"functional test #{i}: output is not JSON ({exc})") from exc
        pairs.append((lcb_args(test["input"], i), expected))
    if not pairs:
        raise ValueError("call ground truth has no tests")
    fn = _func_name(gt, entry)
    extra = _opt(gt, "scoring", "tol", "test_timeout") if isinstance(gt, Mapping) else {}
    return CallReward(pairs, fn, **extra)


_PYTHON_NAMES = ("python", "python3", "py")


def _stdin_tests(tests: Any) -> list[dict[str, str]]:
    found = []
    for i, test in enumerate(tests):
        if not isinstance(test, Mapping) or "input" not in test or "output" not in test:
            raise ValueError(f"stdin_stdout test #{i} must be an object with input and output")
        found.append({"input": str(test["input"] or ""), "output": str(test["output"] or "")})
    return found


def codeforces_kind(gt: Mapping[str, Any]) -> RewardSpec:
    """open-r1's Codeforces rows (``official_tests``, ``generated_checker``,
    ``time_limit`` s, ``memory_limit`` MB, ``language``, ``input_mode``),
    judged as its Piston judge does: its checker (Python, ``checker input
    correct_output solution_output``), else lines compared with whitespace
    folded; Python candidates judged the same way (CPU time, real memory)."""
    if gt.get("input_mode") not in (None, "stdio"):
        raise ValueError(
            f"codeforces: input_mode {gt['input_mode']!r} is not graded (only 'stdio')"
        )
    checker = gt.get("generated_checker")
    return ContestReward(
        _stdin_tests(_json(gt["official_tests"], "official_tests")),
        language=str(gt.get("language") or "cpp"),
        time_limit=float(gt.get("time_limit") or 2.0),
        memory_limit_mb=int(gt.get("memory_limit") or 256),
        compare="tokens",
        checker=(
            {"protocol": "openr1", "language": "python", "source": checker}
            if isinstance(checker, str) and checker.strip()
            else None
        ),
        **_opt(gt, "scoring"),
    )


def stdin_stdout_kind(gt: Any, entry: str) -> RewardSpec:
    """open-r1 ``{"language", "test_cases": [{"input", "output", "type": "stdin_stdout"}]}``,
    LiveCodeBench ``[{"input", "output", "testtype": "stdin"}]``, or
    ``{"inputs": [...], "outputs": [...]}``; lines compared stripped. A
    language other than Python is judged by the server
    (:class:`~collimate_rl.ContestReward`); so are open-r1's Codeforces rows
    (``official_tests``)."""
    if isinstance(gt, Mapping):
        if gt.get("official_tests") is not None:
            return codeforces_kind(gt)
        language = gt.get("language")
        if language is not None and str(language).lower() not in _PYTHON_NAMES:
            cases = gt.get("test_cases")
            if cases is None:
                raise ValueError(f"stdin_stdout in {language!r} needs 'test_cases'")
            return ContestReward(
                _stdin_tests(_json(cases, "test_cases")),
                language=str(language),
                compare="lines",
                **_opt(gt, "scoring", "time_limit"),
            )
        if "inputs" in gt and "outputs" in gt:
            inputs, outputs = gt["inputs"], gt["outputs"]
            if not isinstance(inputs, list) or not isinstance(outputs, list):
                raise ValueError("stdin_stdout: 'inputs' and 'outputs' must be lists")
            if len(inputs) != len(outputs):
                raise ValueError(f"{len(inputs)} inputs but {len(outputs)} outputs")
            tests: list[Any] = [
                {"input": i, "output": o} for i, o in zip(inputs, outputs, strict=True)
            ]
        elif gt.get("test_cases") is not None:
            tests = list(_json(gt["test_cases"], "test_cases"))
        else:
            tests = _lcb_tests(gt)
        return StdinStdoutReward(tests, **_opt(gt, "scoring", "test_timeout"))
    if isinstance(gt, (list, tuple)):
        return StdinStdoutReward(list(gt))
    raise ValueError(f"stdin_stdout ground truth must be an object or a list, got {gt!r:.80}")


def contest_kind(gt: Any, entry: str) -> RewardSpec:
    """A program judged like a contest: ``{"tests": [{"input", "output"}],
    "language"?, "time_limit"?, "memory_limit_mb"?, "compare"?,
    "float_tol"?, "checker"?, "scoring"?}`` (``language`` ``auto``: each
    candidate in its fence's language; CodeContests' rows)."""
    if not isinstance(gt, Mapping):
        raise ValueError("contest ground truth must be an object with tests")
    return ContestReward(
        _stdin_tests(_json(gt["tests"], "tests")),
        language=str(gt.get("language") or "auto"),
        **_opt(gt, "time_limit", "memory_limit_mb", "compare", "float_tol", "checker", "scoring"),
    )


def appended_tests_kind(gt: Any, entry: str) -> RewardSpec:
    """A test program run after the candidate's code (MultiPL-E,
    HumanEval-X, MBXP): ``{"tests", "language", "prompt"?, "stop_tokens"?,
    "time_limit"?, "memory_limit_mb"?, "typecheck"?}``."""
    if not isinstance(gt, Mapping):
        raise ValueError("program ground truth must be an object with tests and language")
    return ProgramReward(
        gt["tests"],
        language=gt["language"],
        prompt=gt.get("prompt"),
        stop_tokens=gt.get("stop_tokens") or (),
        **_opt(gt, "time_limit", "memory_limit_mb", "typecheck"),
    )


def _paired_tests(gt: Mapping[str, Any], kind: str, *, unwrap: bool = False) -> Any:
    """``gt["tests"]``, else its ``inputs`` and ``outputs`` lists paired into
    ``{"input", "output"}`` tests. ``unwrap``: an output that is a list of
    one value is that value (APPS/TACO call-based rows wrap a single return
    value in a list)."""
    if "tests" in gt:
        return gt["tests"]
    inputs, outputs = gt.get("inputs"), gt.get("outputs")
    if not isinstance(inputs, list) or not isinstance(outputs, list):
        raise ValueError(f"{kind} ground truth needs 'tests' or 'inputs' + 'outputs' lists")
    if len(inputs) != len(outputs):
        raise ValueError(f"{len(inputs)} inputs but {len(outputs)} outputs")
    if unwrap:
        outputs = [o[0] if isinstance(o, list) and len(o) == 1 else o for o in outputs]
    return [{"input": i, "output": o} for i, o in zip(inputs, outputs, strict=True)]


def unit_test_kind(gt: Any, entry: str) -> RewardSpec:
    """A list of tests, ``{"tests": [...]}``, or ``{"fn_name", "inputs", "outputs"}``."""
    if isinstance(gt, (list, tuple)):
        return UnitTestReward(list(gt), entry=entry)
    if not isinstance(gt, Mapping):
        raise ValueError(f"unit_test ground truth must be a list or an object, got {gt!r:.80}")
    name = str(gt.get("entry") or gt.get("fn_name") or entry)
    tests = _paired_tests(gt, "unit_test", unwrap=True)
    return UnitTestReward(tests, entry=name, **_opt(gt, "tol", "test_timeout", "scoring"))


def property_kind(gt: Any, entry: str) -> RewardSpec:
    """``{"reference", "generator", "k"?, "entry"?}``."""
    if not isinstance(gt, Mapping):
        raise ValueError("property ground truth must be an object with reference and generator")
    return PropertyReward(
        gt["reference"],
        gt["generator"],
        k=int(gt.get("k", 16)),
        entry=str(gt.get("entry") or entry),
        **_opt(gt, "tol", "test_timeout", "scoring"),
    )


def stdio_kind(gt: Any, entry: str) -> RewardSpec:
    """``{"tests": [{"input", "output"}]}``, ``{"inputs": [...], "outputs": [...]}``
    or a bare list of such tests."""
    if isinstance(gt, (list, tuple)):
        return StdioReward(list(gt))
    if not isinstance(gt, Mapping):
        raise ValueError("stdio ground truth must be an object or a list of tests")
    tests = _paired_tests(gt, "stdio")
    return StdioReward(tests, **_opt(gt, "float_tol", "test_timeout", "scoring"))


@hookimpl
def collimate_rl_reward_kinds() -> Mapping[str, RewardFactory]:
    return {
        "unit_test": unit_test_kind,
        "property": property_kind,
        "stdio": stdio_kind,
        "assert": assert_kind,
        "pytest": pytest_kind,
        "call": call_kind,
        "stdin_stdout": stdin_stdout_kind,
        "program": appended_tests_kind,
        "contest": contest_kind,
    }
