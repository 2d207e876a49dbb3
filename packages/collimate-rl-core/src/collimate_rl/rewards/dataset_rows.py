"""The rows of the multi-language benchmarks, as ``datasets`` loads them,
to the ground truth of a :class:`~.appended_tests.ProgramReward`.

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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .appended_tests import program_language

__all__ = ["program_ground_truth"]

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
