"""The rows of the multi-language datasets, as ``datasets`` loads them, to
their ground truth: a :class:`~.appended_tests.ProgramReward` for the test
programs of MultiPL-E, HumanEval-X and MBXP, a
:class:`~.contest.ContestReward` for CodeContests' problems.

=============  =====================================  ====================================
dataset        row                                    language from
=============  =====================================  ====================================
MultiPL-E      ``prompt``, ``tests``, ``stop_tokens``  ``language``: ``cpp``, ``java``,
                                                       ``js``, ``ts``, ``rs``, ``go_test.go``
HumanEval-X    ``prompt``, ``test`` (, ``declaration``)  ``task_id``: ``CPP/0``, ``Java/0``,
                                                       ``JavaScript/0``, ``Go/0``
MBXP           ``prompt``, ``test``, ``entry_point``    ``language``; ``task_id`` ``MBCPP/1``
=============  =====================================  ====================================

Each is joined as its own harness joins it: HumanEval-X's C++ programs get
the includes its harness adds when the prompt lacks them, its Go programs
the package clause and imports (``testing``, testify) its harness writes
(``test_setup`` when the row has it); MBXP's TypeScript is run even with
type errors, as its harness does (its reference solutions do not all
type-check). Python rows of these datasets are left to the Python kinds.

CodeContests (``deepmind/code_contests``) rows hold ``public_tests``,
``private_tests`` and ``generated_tests`` (each ``{"input": [...],
"output": [...]}``), ``time_limit`` (``{"seconds", "nanos"}``) and
``memory_limit_bytes``; its problems take solutions in any language, so a
row without a ``language`` column is judged in the language each
completion's fence names (``language="auto"``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .appended_tests import program_language

__all__ = [
    "CODECONTESTS_TESTS",
    "codecontests_ground_truth",
    "dataset_ground_truth",
    "program_ground_truth",
]

#: CodeContests' test columns, all judged (its generated tests too, as
#: AlphaCode judged them).
CODECONTESTS_TESTS: Final = ("public_tests", "private_tests", "generated_tests")

#: What HumanEval-X's harness puts before a C++ prompt lacking it, but
#: ``<cstring>``: with it, a test calling the prompt's ``strlen(string)`` on
#: a literal calls C's ``strlen`` instead (CPP/23 would pass whatever the
#: candidate wrote); a candidate needing it includes it itself.
HUMANEVAL_X_CPP_INCLUDES: Final = (
    "#include<stdlib.h>",
    "#include<algorithm>",
    "#include<math.h>",
    "#include<stdio.h>",
    "#include<vector>",
    "#include<string>",
    "#include<climits>",
    "#include<iostream>",
)
#: HumanEval-X's Go test setup (the Hub's rows do not carry it).
HUMANEVAL_X_GO_SETUP: Final = (
    'package main\n\nimport (\n    "testing"\n    "github.com/stretchr/testify/assert"\n)\n'
)
#: HumanEval-X task id prefixes.
_HUMANEVAL_X: Final = {"CPP": "cpp", "Java": "java", "JavaScript": "javascript", "Go": "go",
                       "Rust": "rust"}  # fmt: skip


def _task_prefix(row: Mapping[str, Any]) -> str:
    task = row.get("task_id")
    return task.split("/", 1)[0] if isinstance(task, str) and "/" in task else ""


def _humaneval_x_prompt(language: str, row: Mapping[str, Any], prompt: str) -> str:
    if language == "cpp":
        missing = [line for line in HUMANEVAL_X_CPP_INCLUDES if line not in prompt]
        using = "" if "using namespace std;" in prompt else "using namespace std;\n"
        return "\n".join(missing) + "\n" + using + prompt
    if language == "go":
        setup = row.get("test_setup")
        imports = row.get("import")
        if isinstance(imports, str) and imports:
            prompt = prompt.replace(imports, "")
        return (setup if isinstance(setup, str) and setup else HUMANEVAL_X_GO_SETUP) + prompt
    return prompt


def program_ground_truth(row: Mapping[str, Any], tests: str) -> dict[str, Any] | None:
    """The ``program`` ground truth of a MultiPL-E, HumanEval-X or MBXP row
    (``tests``: its test column), or None for a row of none of them (or a
    Python one). A row these harnesses cannot run raises ValueError."""
    prefix = _task_prefix(row)
    named = row.get("language")
    language = program_language(named) if isinstance(named, str) else None
    if language is None and prefix in _HUMANEVAL_X:
        language = _HUMANEVAL_X[prefix]
    if language is None:
        return None
    prompt = row.get("prompt")
    if not isinstance(prompt, str):
        raise ValueError(f"a {language} test-program row needs its prompt (the code it continues)")
    mbxp = prefix.startswith("MB")
    if prefix in _HUMANEVAL_X:
        if language == "rust" and "#[cfg(test)]" in tests:
            raise ValueError(
                "HumanEval-X's Rust tests are cargo tests needing the rand, regex and md5 "
                "crates; they are not run here (MultiPL-E's Rust rows are)"
            )
        prompt = _humaneval_x_prompt(language, row, prompt)
    truth: dict[str, Any] = {
        "kind": "program",
        "language": language,
        "tests": tests,
        "prompt": prompt,
        "typecheck": not mbxp,
    }
    stops = row.get("stop_tokens")
    if isinstance(stops, (list, tuple)) and all(isinstance(t, str) and t for t in stops):
        truth["stop_tokens"] = list(stops)
    return truth


def _tests_of(value: Any, column: str) -> list[dict[str, str]]:
    if value is None:
        return []
    if not isinstance(value, Mapping):
        raise ValueError(f"{column} must be {{'input': [...], 'output': [...]}}")
    inputs, outputs = value.get("input") or [], value.get("output") or []
    if len(inputs) != len(outputs):
        raise ValueError(f"{column}: {len(inputs)} inputs but {len(outputs)} outputs")
    return [{"input": str(i), "output": str(o)} for i, o in zip(inputs, outputs, strict=True)]


def codecontests_ground_truth(row: Mapping[str, Any]) -> dict[str, Any]:
    """The ``contest`` ground truth of a CodeContests row (see the module)."""
    for column in ("input_file", "output_file"):
        if isinstance(row.get(column), str) and row[column].strip():
            raise ValueError(
                f"CodeContests: {column} {row[column]!r}: problems reading or writing files "
                "are not judged (only standard input and output)"
            )
    tests = [t for column in CODECONTESTS_TESTS for t in _tests_of(row.get(column), column)]
    if not tests:
        raise ValueError("CodeContests row has no tests (public, private or generated)")
    truth: dict[str, Any] = {"kind": "contest", "tests": tests, "compare": "tokens"}
    language = row.get("language")
    truth["language"] = language if isinstance(language, str) and language else "auto"
    limit = row.get("time_limit")
    if isinstance(limit, Mapping):
        seconds = float(limit.get("seconds") or 0) + float(limit.get("nanos") or 0) / 1e9
        if seconds > 0:
            truth["time_limit"] = min(seconds, 60.0)
    memory = row.get("memory_limit_bytes")
    if isinstance(memory, int) and not isinstance(memory, bool) and memory > 0:
        truth["memory_limit_mb"] = max(1, min(4096, memory >> 20))
    return truth


def dataset_ground_truth(row: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ground truth of a whole row of one of these datasets handed over
    as the ground truth itself (verl's ``ground_truth``, a JSON line), or
    None for a row of none of them."""
    if isinstance(row.get("public_tests"), Mapping):
        return codecontests_ground_truth(row)
    for column in ("tests", "test"):
        if isinstance(row.get(column), str):
            return program_ground_truth(row, row[column])
    return None
